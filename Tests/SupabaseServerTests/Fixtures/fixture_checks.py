"""Failure reporting shared by the official-client fixtures: a clear message on stderr, exit status 1."""

import os
import sys


def fail(message):
    print(f"{os.path.basename(sys.argv[0])}: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
