# Copyright the mpitempo developers. SPDX-License-Identifier: BSD-3-Clause
"""A ReFrame configuration for running the mpitempo check on the local machine (no batch system):
mpitempo starts the mpiruns itself. On a cluster, use the site's configuration instead and give the
check a launcher: -S launcher='srun -n {np} {cmd}'."""
site_configuration = {
    "systems": [{
        "name": "local",
        "descr": "this machine",
        "hostnames": [".*"],
        "partitions": [{"name": "default", "scheduler": "local", "launcher": "local", "environs": ["builtin"]}],
    }],
    "environments": [{"name": "builtin", "cc": "cc"}],
}
