"""Cloud Run jobs run locally: executions as local processes, and the Cloud Run Admin API."""
