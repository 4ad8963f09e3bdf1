"""Results producers of the MERIT project: each ``python -m bench.X`` (from the repository root)
measures something and writes it to ``docs/results/`` with the command, the date and the machine.
Not part of the installed package."""
