"""pytest set-up of the whole repository: how ``make test`` spreads the tests over the cores.

``make test`` runs pytest-xdist workers with ``--dist loadgroup``; the work units it hands out are
chosen here, because the Verilator builds are most of the run and each one is cached by its Verilog
(:mod:`merit.sim.build`, behind a file lock: a worker that needs a model another worker is building
waits for it):

- tests that share a model across modules carry ``@pytest.mark.xdist_group("<model>")``: one unit;
- every other test marked ``sim`` is grouped with the ``sim`` tests of its module (a bench
  module's tests build the same model or a few small ones): one unit per module;
- every other test: one unit per module (as ``--dist loadscope``: a module-scoped fixture is made
  once), where xdist's own ``loadgroup`` would send each such test on its own.

The units that build Verilator models are handed out first (in collection order), then the
modules; so the last units a worker takes are short ones and both workers end together. A plain
``pytest`` run (no ``-n``) runs the same tests, the ``sim`` ones first.
"""

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # before xdist's own hook, which appends the group's name to the test id
    for item in items:
        if item.get_closest_marker("sim") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BuildsFirst(LoadScopeScheduling):
        """Units: an ``xdist_group`` or a module, handed out in collection order."""

        def _split_scope(self, nodeid):
            if nodeid.rfind("@") > nodeid.rfind("]"):    # "...::test[param]@group"
                return nodeid.rsplit("@", 1)[1]
            return nodeid.split("::", 1)[0]

    # loadscope's default order is by the number of tests in a unit: that would put the few long
    # tests that build a model last
    config.option.loadscopereorder = False
    return BuildsFirst(config, log)
