"""Bit-exact references of the WTU: the linear rule (linear.py), the exp2 rule (exp.py) and their vectorised twins."""
