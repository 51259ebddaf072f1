"""Storage: write transactions and writer turns, the statements the ORM cannot say, the
counters kept on session rows, the event feed's order, plan revisions, and a fresh data
directory made ready."""
