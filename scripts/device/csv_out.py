"""The device scripts' one way to write a table: a CSV file in the output
folder, echoed to stdout (so a run's log holds the figures too)."""
import csv
import os
import sys


def write_csv(out_dir, name, header, rows):
    with open(os.path.join(out_dir, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"== {name}")
    print(",".join(header))
    for r in rows:
        print(",".join(str(x) for x in r))
    sys.stdout.flush()
