"""What a site is: its inventory and kind, this host's probes and host class, the ReFrame and
Spack configuration rendered from the inventory, containers, machine presets and ``crosstalk doctor``.
"""
