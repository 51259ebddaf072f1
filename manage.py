#!/usr/bin/env python
"""9plan's command-line entry point in a checkout; installed, the same is the `9plan` command."""

from nineplan.cli import main

if __name__ == "__main__":
    main()
