"""The WTU (WiCSum threshold unit): the linear rule and its top (linear.py), the exp2 rule (exp.py), lane reductions and stream layouts."""
