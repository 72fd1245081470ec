"""The run directory: append-only logs that survive a kill, atomic records, JOBDIR offsets.

See docs/OUTPUT.md for the files, their columns and the resume design.
"""
