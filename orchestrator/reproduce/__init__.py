"""`tpcbench reproduce`: the paper's measurements on the paper-profile lab (docs/reproduce.md).

plan = plan_reproduction(inventory, SCALES["paper"])      # what runs, at which numbers
result = Reproduction(plan, inventory, settings, home=home).run(stop)

The package sits between the campaign and the command line: it runs the preliminary sweeps
and the campaigns through their own code, and the webapp's `paper_report` reads the results.
"""
