"""The user's platforms' colours (crosstalk.figures.style.assign_colours): one colour per platform,
the same in every figure of a report, and never the colour of another platform of the report."""
import itertools
import zlib

from crosstalk.figures.style import EXAMPLE, PALETTE, assign_colours, colour


def _slot(name):
    return zlib.crc32(name.encode()) % len(PALETTE)


def _colliding_pair():
    """Two platform names whose hashes pick the same colour."""
    seen = {}
    for i in itertools.count():
        name = f"site{i}@{i:08x}"
        if _slot(name) in seen:
            return seen[_slot(name)], name
        seen[_slot(name)] = name


def test_platforms_whose_names_hash_alike_get_different_colours():
    first, second = _colliding_pair()
    assigned = assign_colours([second, first])
    assert assigned[first] == PALETTE[_slot(first)]          # the first alphabetically keeps its own
    assert assigned[second] != assigned[first]
    # every figure asks colour() with a target (platform:partition+environ)
    assert colour(f"{first}:mpi+gnu-openmpi") == colour(f"{first}:slurm+gnu-mpich") == assigned[first]
    assert colour(f"{second}:mpi+gnu-openmpi") == assigned[second]


def test_eight_platforms_take_the_eight_colours_and_a_ninth_repeats_one():
    names = [f"p{i}@{i:08x}" for i in range(9)]
    assert sorted(assign_colours(names[:8]).values()) == sorted(PALETTE)
    assert set(assign_colours(names).values()) == set(PALETTE)


def test_a_new_platform_leaves_the_others_colours_where_its_own_is_free():
    first, second = _colliding_pair()
    other = next(f"new{i}@{i:08x}" for i in itertools.count()
                 if _slot(f"new{i}@{i:08x}") not in {_slot(first), (_slot(first) + 1) % len(PALETTE)})
    before = assign_colours([first, second])
    after = assign_colours([first, second, other])
    assert {p: after[p] for p in before} == before


def test_examples_stay_grey_and_an_unassigned_platform_takes_its_hashed_colour():
    assign_colours(["mine@00000000"])
    assert colour("vcluster@81abe5a2 (example):mpi+gnu-openmpi") == EXAMPLE
    assert colour("elsewhere@12345678:mpi+gnu") == PALETTE[_slot("elsewhere@12345678")]
