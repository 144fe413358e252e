"""What a test's skip says about the platform (the words between the ReFrame tests and the claims).

A case skipped because the platform cannot hold it (too few nodes or cores for its layout, no
control over links or CPU frequency) stays skipped whatever the profile or the installation: its
claims are *not applicable* there. Any other skip (an environment or a case the profile leaves out,
a program not installed) could run after a change here: its claims are *not run*."""

#: How a skip reason for a platform that cannot hold the case begins.
PLATFORM = "does not fit this platform: "


def platform_reason(why):
    """The skip reason of a case this platform cannot hold."""
    return PLATFORM + why


def is_platform(reason):
    """Whether a recorded skip reason is one of :func:`platform_reason`."""
    return isinstance(reason, str) and reason.startswith(PLATFORM)
