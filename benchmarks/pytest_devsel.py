"""A pytest plugin for device calls: run only the node IDs listed in the file ``$DEVSEL_KEEP`` (one
per line), e.g. the tests a time-limited call did not reach. Passing the IDs as arguments did not
work under xdist on the GPU machine (its workers collected nothing); a collection hook does.

    DEVSEL_KEEP=ids.txt PYTHONPATH=benchmarks python -m pytest -p pytest_devsel -n 16 tests
"""
import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("DEVSEL_KEEP")
    if not path:
        return
    keep = {line.strip() for line in open(path) if line.strip()}
    config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in keep])
    items[:] = [i for i in items if i.nodeid in keep]
