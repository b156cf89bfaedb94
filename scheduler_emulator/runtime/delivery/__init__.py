"""Delivery: dispatchers turn an attempt into a request, transports send it (real HTTP through
libcurl's event loop or http.client, in-process WSGI/ASGI apps), Pub/Sub publishers, and the
OIDC/OAuth tokens requests carry."""

#: Attempts in progress at once in a burst (the delivery pool's limit until a stall raises it),
#: and so the kept-alive connections libcurl's cache holds between bursts: with fewer kept
#: (512), a cold minute of 10,000 jobs closed and opened again about 8,000 connections and ran
#: 0.3-0.7 s later than the next minute, which opened none (docs/performance.md).
CONNECTIONS = 1024
