"""The KVMU bench: golden jobs and expected AXI traffic (bench.py), its cocotb test and its Verilog-2005 testbench."""
