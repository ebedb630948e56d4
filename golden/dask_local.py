"""The Dask ``LocalCluster`` every ``--scheduler local`` run starts (the needle grid here, the sweeps of vrex.synth)
and the tests use."""

from __future__ import annotations

import logging

__all__ = ["local_cluster", "LOCAL_HTTP_ADDRESS"]

# Dask's scheduler always serves HTTP (the dashboard, /metrics): with ``dashboard_address=None`` it binds the default
# port 8787 and, when another cluster holds it, warns "Port 8787 is already in use" and takes another (a warning that
# the test suite turns into an error). A free loopback port is asked for instead: no clash, no warning, nothing
# listening beyond this machine.
LOCAL_HTTP_ADDRESS = "127.0.0.1:0"


def local_cluster(workers: int = 2):
    """A ``distributed.LocalCluster`` of ``workers`` processes with one thread each, its logs at ERROR, its HTTP
    server on a free loopback port (:data:`LOCAL_HTTP_ADDRESS`). The caller closes it (it is a context manager)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                        dashboard_address=LOCAL_HTTP_ADDRESS, silence_logs=logging.ERROR)
