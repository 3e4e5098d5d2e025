"""The CSV reader's C fast path: for a block of plain numbers, the doubles float() gives, bit for
bit, whether C converts them or leaves them to Python's PyOS_string_to_double; for anything else,
None (the reader then parses the block with polars or Python)."""

import random
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import need_csvfast


@pytest.fixture(scope="module")
def csvfast():
    return need_csvfast()


def parse_one(csvfast, cell):
    """float(cell) as the extension parses it, or None."""
    parsed = csvfast.parse((cell + "\n").encode(), 1, (0,))
    return None if parsed is None else np.frombuffer(parsed[1])[0]


def bits(x):
    return struct.pack("<d", x)


def check_all(csvfast, cells, must_take=True):
    """Every cell the extension takes is float(cell) bit for bit (so -0.0 too); with must_take, it
    takes every one. Returns how many it took."""
    taken = 0
    for cell in cells:
        value = parse_one(csvfast, cell)
        if value is None:
            assert not must_take, cell
            continue
        taken += 1
        assert bits(value) == bits(float(cell)), (cell, value, float(cell))
    return taken


def random_doubles(rng, n, low_exp=-8, high_exp=8):
    """n doubles with random mantissa bits and signs, from 10^low_exp to 10^high_exp in size."""
    return [rng.choice((-1, 1)) * rng.uniform(1, 10) * 10.0 ** rng.randint(low_exp, high_exp - 1) for _ in range(n)]


def test_shortest_repr_of_random_doubles(csvfast):
    """repr (17 significant digits at most) of doubles from 1e-8 to 1e8: all taken, all exact."""
    rng = random.Random(1)
    assert check_all(csvfast, [repr(x) for x in random_doubles(rng, 60_000)]) == 60_000


def test_printf_formats(csvfast):
    """%g and %e at every precision up to 19 significant digits, %f with up to 11 decimals: all
    taken, all exact."""
    rng = random.Random(2)
    for x in random_doubles(rng, 400, -6, 6):
        check_all(csvfast, [f"{x:.{p}g}" for p in range(1, 20)] + [f"{x:.{p}e}" for p in range(19)])
        check_all(csvfast, [f"{x:.{p}f}" for p in range(12)])


def test_every_magnitude(csvfast):
    """Tiny, huge and subnormal doubles, and numbers with more than 19 significant digits: C
    converts what it can be sure of (down to 2^-1022), Python the rest; all taken, all exact."""
    rng = random.Random(5)
    xs = random_doubles(rng, 20_000, -320, 308)
    xs += [struct.unpack("<d", rng.getrandbits(52).to_bytes(8, "little"))[0] for _ in range(2000)]  # subnormal
    xs += [2.2250738585072014e-308, 2.225073858507201e-308, 5e-324, 1.7976931348623157e308]
    cells = [repr(x) for x in xs] + [f"{x:.18e}" for x in xs[:5000]] + [f"{x:.25g}" for x in xs[:2000]]
    cells += ["1e-28", "1e28", "12345678901234567890", "0.12345678901234567890", "1.0000000000000000000",
              "1e-400", "-1e-400", "2.4703282292062328e-324", "2.4703282292062327e-324"]
    assert check_all(csvfast, cells) == len(cells)


def test_few_cells_for_python_or_none(csvfast):
    """A block with a few cells left to Python is taken; one with many goes to polars (faster)."""
    long = "0.1234567890123456789012345"  # 25 significant digits
    few = ("1.5\n" * 1000 + long + "\n").encode()
    rows, data = csvfast.parse(few, 1, (0,))
    assert rows == 1001 and np.frombuffer(data)[-1] == float(long)
    assert csvfast.parse(((long + "\n") * 1000).encode(), 1, (0,)) is None


def test_random_digit_strings(csvfast):
    """Up to 19 random digits, the point anywhere, an exponent or not: exactly float()'s double.
    Most have far more digits than a double holds, so they land anywhere between two doubles."""
    rng = random.Random(3)
    cells = []
    for _ in range(60_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 19)))
        point = rng.randint(0, len(digits))
        cell = rng.choice(["", "-", "+"]) + digits[:point] + "." + digits[point:] if rng.random() < 0.8 else digits
        if rng.random() < 0.3:
            cell += rng.choice("eE") + rng.choice(["", "-", "+"]) + str(rng.randint(0, 12))
        cells.append(cell)
    check_all(csvfast, cells)


def test_ties_and_near_ties(csvfast):
    """Exact halfway points between doubles round to even, and a hair either side rounds away,
    through each conversion: integers, products by powers of 5, quotients by them."""
    rng = random.Random(4)
    cells = []
    for _ in range(3000):
        t = rng.randrange(2**53 + 1, 10**16, 2)  # odd: halfway between the doubles t - 1 and t + 1
        cells += [str(t), f"{t}000e-3", f"{t}.000", f"{t // 10}.{t % 10}e1", f"{t}0e-1"]
        cells += [f"{t}001e-3", f"{t - 1}999e-3", f"{t}.001", f"{t - 1}.999"]  # a hair above, below
        u = rng.randrange(2**54, 2**63)
        cells += [str(u), f"{u}e5", f"{u}e-5", f"{u}e-27", f"{u % 10**12}e27"]
    cells += ["9007199254740993", "9007199254740995", "18014398509481986", "9223372036854775807"]
    check_all(csvfast, cells)
    assert parse_one(csvfast, "9007199254740993") == 2.0**53  # the tie goes to the even neighbour
    assert parse_one(csvfast, "9007199254740995") == 2.0**53 + 4


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=2000, deadline=None)
def test_any_double_in_range_reads_back(x):
    csvfast = need_csvfast()
    cells = [repr(x), f"{x:.17g}", f"{x:.17e}", f"{x:.15g}", f"{x:.6f}"]
    for cell in cells:
        value = parse_one(csvfast, cell)
        if value is not None:
            assert bits(value) == bits(float(cell)), cell
    assert parse_one(csvfast, repr(x)) is not None


@pytest.mark.parametrize("cell", [
    "", " ", "\v1", "1\f", "nan", "NaN", "inf", "-inf", "Infinity", "1_0", "0x10", "1e", "1e+", "e5", ".", "-", "+",
    "--1", "+-1", "1.2.3", "1e5.5", "1e2e3", "\u0661", '"1"', "1e400", "-1e400", "1e309", "1.8e308",
    "0." + "0" * 99999 + "1e1000000", "0." + "0" * 100026 + "5e1000000",  # a 7-digit exponent: inf, not 1
    "1" * 1001,  # a number of over 1000 characters
])
def test_what_is_not_a_plain_number_is_left_to_the_other_parsers(csvfast, cell):
    assert parse_one(csvfast, cell) is None


@pytest.mark.parametrize("cell, value", [
    ("+1.5", 1.5), ("-.5", -0.5), ("5.", 5.0), ("1E5", 1e5), ("1e+05", 1e5), ("-0", -0.0), ("-0.0", -0.0),
    ("00012", 12.0), ("0.000", 0.0), ("000000000000000000000001", 1.0), ("0.0000000000000000000000001", 1e-25),
    ("1234567890123456789", 1234567890123456789.0), ("123456789012345678.9e-20", 1.234567890123456789e-3),
    ("0e999999", 0.0), (" 1", 1.0), ("1 ", 1.0), ("\t-2.5 \t", -2.5),
])
def test_plain_numbers(csvfast, cell, value):
    assert bits(parse_one(csvfast, cell)) == bits(value)


def test_text_cells_take_any_byte_but_quotes_cr_nul_and_delimiters(csvfast):
    """Form feed, vertical tab, NEL, LS, tabs, bytes that are not UTF-8: text, as for Python's reader."""
    block = "1,a\fb\vc\x85d\u2028e\tf,2\n".encode() + b"3,\xff\xfe,4\n"
    rows, data = csvfast.parse(block, 3, (0, 2))
    assert rows == 2 and np.frombuffer(data).tolist() == [1, 3, 2, 4]


def test_the_reader_uses_the_extension_when_it_is_built(csvfast):
    from rnea_cli import trajectory

    assert trajectory._csvfast is csvfast


def test_drop_spares_lets_go_of_the_kept_buffers(csvfast):
    data = csvfast.parse(b"1\n2\n", 1, (0,))[1]
    kept = sys.getrefcount(data)
    csvfast.drop_spares()
    assert sys.getrefcount(data) == kept - 1


def test_a_block_of_rows(csvfast):
    """Column-major output of the wanted columns only, in the order given; text in the others;
    spaces and tabs around a number, as float(cell.strip()) takes them."""
    block = b"1,note,2.5,3\r\n -4 ,x y,\t5e-1, 6 \r\n7,,8,9.25\n"
    rows, data = csvfast.parse(block, 4, (0, 2, 3))
    assert rows == 3
    np.testing.assert_array_equal(np.frombuffer(data).reshape(3, 3), [[1, -4, 7], [2.5, 0.5, 8], [3, 6, 9.25]])
    rows, data = csvfast.parse(block, 4, (3,))
    np.testing.assert_array_equal(np.frombuffer(data), [3, 6, 9.25])


@pytest.mark.parametrize("block", [
    b"1,2\n3\n",            # a field missing
    b"1,2\n3,4,5\n",        # one too many
    b"1,2\n\n3,4\n",        # a blank line
    b"1,2\n3,4",            # no newline at the end
    b"1,2\r3,4\n",          # a lone carriage return
    b'1,2\n"3",4\n',        # quotes
    b'1,"ab",2\n',          # quotes in a text cell (three fields, as wanted)
    b"1,a\x00b,2\n",        # NUL in a text cell
    b"1,2,\n",              # a trailing comma: one more field
    b"1,2\n3, \n",          # a cell of blanks
    b"1,2\n3,4\v\n",        # other white space: left to Python's strip()
    b"1,2\n3,4 5\n",        # two numbers in a cell
    b"",
])
def test_blocks_that_are_not_plain(csvfast, block):
    ncols = 3 if b"a" in block else 2
    wanted = (0, 2) if ncols == 3 else (0, 1)
    assert csvfast.parse(block, ncols, wanted) is None


def test_bad_arguments(csvfast):
    with pytest.raises(ValueError):
        csvfast.parse(b"1\n", 1, ())
    with pytest.raises(ValueError):
        csvfast.parse(b"1\n", 1, (1,))
    with pytest.raises(ValueError):
        csvfast.parse(b"1,2\n", 2, (0, 0))
    with pytest.raises(TypeError):
        csvfast.parse("1\n", 1, (0,))


def test_output_buffers_are_reused_only_when_nothing_holds_them(csvfast):
    """A result, or a view of one, that is still alive is never overwritten by a later block."""
    first = np.frombuffer(csvfast.parse(b"1\n2\n3\n", 1, (0,))[1])
    view = np.frombuffer(csvfast.parse(b"4\n5\n6\n", 1, (0,))[1])[1:]
    later = [np.frombuffer(csvfast.parse(f"{k}\n{k}\n{k}\n".encode(), 1, (0,))[1]).copy() for k in range(10, 30)]
    np.testing.assert_array_equal(first, [1, 2, 3])
    np.testing.assert_array_equal(view, [5, 6])
    assert [x.tolist() for x in later] == [[k] * 3 for k in range(10, 30)]


def test_a_buffer_nothing_holds_is_reused(csvfast):
    """Fresh memory costs a page fault per 4 KB, a quarter of the parse: a result dropped is the
    next block's buffer. In a fresh interpreter, so that the first result is surely kept as a
    spare (alive: its id cannot pass to another object)."""
    code = ("from rnea_cli import _csvfast\nblock = b'1.5\\n' * 1000\n"
            "first = id(_csvfast.parse(block, 1, (0,))[1])\n"
            "held = _csvfast.parse(block, 1, (0,))\n"
            "print(id(held[1]) == first, id(_csvfast.parse(block, 1, (0,))[1]) == first)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]  # reused once dropped; not while held
