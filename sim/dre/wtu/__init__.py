"""The WTU bench (bench.py) and its workload statistics (stats.py)."""
