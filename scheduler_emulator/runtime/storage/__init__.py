"""Storage: the SQLite store, the checks of its database file, the data-directory lock, the read
model the dashboard and the terminal views share, and the execution log."""
