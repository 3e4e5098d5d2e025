/* The CSV reader's fast path: a block of plain decimal numbers, one row a line, no quotes.
 *
 * parse(block, ncols, wanted) -> (rows, bytearray of rows * len(wanted) doubles, column-major),
 * or None when the block is not of that plain kind: the caller then parses it the general way,
 * which also finds and names what is wrong. Every value is the double float() gives (correctly
 * rounded); a number this code cannot convert exactly (over 19 significant digits, or a decimal
 * exponent beyond +-27 after the point is moved) makes the block not plain.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if !defined(__SIZEOF_INT128__) || FLT_EVAL_METHOD != 0 || DBL_MANT_DIG != 53
#error "needs unsigned __int128 and IEEE doubles evaluated as doubles"
#endif
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the 8-digit loads take the first digit as the lowest byte: little-endian only"
#endif

typedef unsigned __int128 u128;

#define MAX_DIGITS 19 /* 10^19 < 2^64: the significand is exact in a uint64 */
#define MAX_EXP10 27  /* 5^27 < 2^63: exact, and m * 5^27 < 2^127 */

static uint64_t POW5[MAX_EXP10 + 1], RECIP5[MAX_EXP10 + 1];
static int BITS5[MAX_EXP10 + 1];

static int bit_length(u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    return hi ? 128 - __builtin_clzll(hi) : (lo ? 64 - __builtin_clzll(lo) : 0);
}

/* (P + frac) * 2^scale rounded to the nearest double, ties to even; 0 <= frac < 1, and
 * frac > 0 iff inexact. P has at least 54 bits when inexact, so frac lies below the rounding bit. */
static double round_scaled(u128 P, int scale, int inexact)
{
    int shift = bit_length(P) - 53;
    if (shift <= 0)
        return ldexp((double)(uint64_t)P, scale);
    uint64_t mant = (uint64_t)(P >> shift);
    u128 rest = P & (((u128)1 << shift) - 1), half = (u128)1 << (shift - 1);
    if (rest > half || (rest == half && (inexact || (mant & 1))))
        mant++; /* 2^53 at most: still exact */
    return ldexp((double)mant, scale + shift);
}

/* m * 10^e for 1 <= m < 2^64, |e| <= MAX_EXP10, exactly: m 10^e = (m 5^e) 2^e, the product in
 * 128 bits; m 10^-k = (m 2^s / 5^k) 2^(-s-k), the quotient with enough bits, the remainder sticky. */
static double scale_pow10_exact(uint64_t m, int e)
{
    if (e >= 0)
        return round_scaled((u128)m * POW5[e], e, 0);
    int k = -e;
    uint64_t d = POW5[k];
    int s = 54 + bit_length(d) - bit_length(m);
    if (s < 0)
        s = 0;
    u128 num = (u128)m << s;
    u128 q = num / d;
    return round_scaled(q, -s - k, num - q * d != 0);
}

/* The double mant 2^e2, for 2^52 <= mant <= 2^53 and a normal result. */
static double make_double(uint64_t mant, int e2)
{
    uint64_t bits = ((uint64_t)(e2 + 1075) << 52) + mant - (1ULL << 52);
    double r;
    memcpy(&r, &bits, 8);
    return r;
}

/* m 10^-k, 1 <= k <= MAX_EXP10, correctly rounded: the normalised m times a 64-bit reciprocal
 * of 5^k, R = floor(2^(63+b) / 5^k) (b: bits of 5^k). The true product P' lies in (P, P + 2^64), so
 * its top 64 bits are hi or hi + 1; only when the bits below the mantissa are a hair from half
 * way is that difference decisive, and then the exact division decides. */
static double div_pow10(uint64_t m, int k)
{
    int lz = __builtin_clzll(m);
    u128 P = (u128)(m << lz) * RECIP5[k];
    uint64_t hi = (uint64_t)(P >> 64);
    int sh = 10 + (int)(hi >> 63); /* hi has 63 or 64 bits; keep 53 */
    uint64_t mant = hi >> sh, rest = hi & ((1ULL << sh) - 1), half = 1ULL << (sh - 1);
    if (rest == half || rest == half - 1)
        return scale_pow10_exact(m, -k);
    return make_double(mant + (rest > half), sh + 1 - lz - BITS5[k] - k);
}

static const uint64_t POW10_U64[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
#define ASCII_ZEROS 0x3030303030303030ULL

/* How many of the 8 bytes of v (first byte lowest) lead with digits. Each non-digit byte sets
 * its high bit; a borrow or carry only reaches the bytes after it. */
static inline int digit_run(uint64_t v)
{
    uint64_t t = ((v + 0x4646464646464646ULL) | (v - ASCII_ZEROS)) & 0x8080808080808080ULL;
    return t ? __builtin_ctzll(t) >> 3 : 8;
}

/* The value of the 8 ASCII digits in v, the first digit in the lowest byte. */
static inline uint64_t eight_digits(uint64_t v)
{
    v -= ASCII_ZEROS;
    v = v * 10 + (v >> 8);                                                       /* pairs */
    return ((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32)) +
            ((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))) >> 32; /* quads, then all */
}

/* Digits at p into *m, 8 at a time (wrapping past 19 digits: the caller counts them). */
static inline __attribute__((always_inline)) const char *digits(const char *p, const char *end, uint64_t *m)
{
    uint64_t x = *m;
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        int n = digit_run(v);
        if (n == 8) {
            x = x * 100000000ULL + eight_digits(v);
            p += 8;
            continue;
        }
        if (n) /* the n digits to the top, '0's below them */
            x = x * POW10_U64[n] + eight_digits((v << (64 - 8 * n)) | (ASCII_ZEROS >> (8 * n)));
        *m = x;
        return p + n;
    }
    for (; p < end && (unsigned)(*p - '0') < 10; p++)
        x = x * 10 + (unsigned)(*p - '0');
    *m = x;
    return p;
}

/* Digits with more than 19 places in all: the significant ones (after leading zeros) must fit. */
static int significant_digits(const char *p, const char *end)
{
    int n = 0, lead = 1;
    for (; p < end && ((unsigned)(*p - '0') < 10 || *p == '.'); p++) {
        if (*p == '.' || (lead && *p == '0'))
            continue;
        lead = 0;
        n++;
    }
    return n;
}

/* A number [+-]digits[.digits][(e|E)[+-]digits] at p (at least one significand digit); its value
 * in *v. Returns the end of the number, or NULL if it is not one, or not exactly convertible here. */
static const char *number(const char *p, const char *end, double *v)
{
    uint64_t m = 0;
    if (p >= end)
        return NULL;
    int neg = *p == '-';
    p += neg | (*p == '+');
    const char *start = p;
    p = digits(p, end, &m);
    Py_ssize_t n = p - start, e = 0;
    if (p < end && *p == '.') {
        const char *fraction = ++p;
        p = digits(p, end, &m);
        e = -(p - fraction);
        n += -e;
    }
    if (n > MAX_DIGITS) {
        if (significant_digits(start, p) > MAX_DIGITS)
            return NULL;
        m = 0; /* the digits again, leading zeros skipped: no wrap */
        for (const char *q = start; q < p; q++)
            if (*q != '.')
                m = m * 10 + (unsigned)(*q - '0');
    }
    else if (n == 0)
        return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = 0, x = 0;
        const char *xs;
        p++;
        if (p < end && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        for (xs = p; p < end && (unsigned)(*p - '0') < 10; p++) {
            if (x >= 100000) /* far out of range, however many digits the point moved */
                return NULL;
            x = x * 10 + (*p - '0');
        }
        if (p == xs)
            return NULL;
        e += eneg ? -x : x;
    }
    double r;
    if (m == 0)
        r = 0.0;
    else if (e < 0 && e >= -MAX_EXP10)
        r = div_pow10(m, (int)-e);
    else if (e == 0 && m <= (1ULL << 53))
        r = (double)m;
    else if (e >= 0 && e <= MAX_EXP10)
        r = scale_pow10_exact(m, (int)e);
    else
        return NULL;
    *v = neg ? -r : r;
    return p;
}

/* Rows of ncols cells, each ended by ',' (the last by '\n' or "\r\n"); slot[c] >= 0: cell c is
 * a number for output column slot[c], spaces and tabs around it allowed; -1: any text without
 * quotes, '\r', NUL or delimiters. */
static int parse_rows(const char *p, const char *end, Py_ssize_t rows, int ncols, const int *slot, double *out)
{
    for (Py_ssize_t row = 0; row < rows; row++) {
        for (int c = 0; c < ncols; c++) {
            if (slot[c] >= 0) { /* blanks around the number, as float(cell.strip()) allows */
                while (p < end && (*p == ' ' || *p == '\t'))
                    p++;
                p = number(p, end, &out[slot[c] * rows + row]);
                if (!p)
                    return -1;
                while (p < end && (*p == ' ' || *p == '\t'))
                    p++;
            }
            else {
                while (p < end && *p != ',' && *p != '\n' && *p != '\r' && *p != '"' && *p != '\0')
                    p++;
            }
            if (c == ncols - 1) {
                if (p < end && *p == '\r')
                    p++;
                if (p >= end || *p != '\n')
                    return -1;
            }
            else if (p >= end || *p != ',')
                return -1;
            p++;
        }
    }
    return p == end ? 0 : -1;
}

static Py_ssize_t count_lines(const char *p, const char *end)
{
    Py_ssize_t n = 0;
    while ((p = memchr(p, '\n', end - p)) != NULL) {
        n++;
        p++;
    }
    return n;
}

/* Output bytearrays are reused once nothing else holds them (no array, no view): fresh memory
 * costs a page fault per 4 KB, a quarter of the parsing time. Only called with the GIL held. */
#define SPARES 4
static PyObject *spare[SPARES];

static PyObject *output(Py_ssize_t size)
{
    int free_slot = -1;
    for (int i = 0; i < SPARES; i++) {
        if (!spare[i]) {
            free_slot = i;
            continue;
        }
        if (Py_REFCNT(spare[i]) == 1 && PyByteArray_GET_SIZE(spare[i]) >= size / 2 &&
            PyByteArray_Resize(spare[i], size) == 0 &&
            (uintptr_t)PyByteArray_AS_STRING(spare[i]) % sizeof(double) == 0)
            return Py_NewRef(spare[i]);
        PyErr_Clear();
    }
    PyObject *data = PyByteArray_FromStringAndSize(NULL, size);
    if (data && free_slot >= 0)
        spare[free_slot] = Py_NewRef(data);
    return data;
}

static PyObject *parse(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int ncols;
    PyObject *wanted, *result = NULL, *data = NULL;
    int *slot = NULL;
    if (!PyArg_ParseTuple(args, "y*iO!", &view, &ncols, &PyTuple_Type, &wanted))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(wanted);
    if (ncols <= 0 || k == 0) {
        PyErr_SetString(PyExc_ValueError, "need at least one column and one wanted column");
        goto done;
    }
    slot = PyMem_Malloc(sizeof(int) * ncols);
    if (!slot) {
        PyErr_NoMemory();
        goto done;
    }
    for (int c = 0; c < ncols; c++)
        slot[c] = -1;
    for (Py_ssize_t j = 0; j < k; j++) {
        long c = PyLong_AsLong(PyTuple_GET_ITEM(wanted, j));
        if (c == -1 && PyErr_Occurred())
            goto done;
        if (c < 0 || c >= ncols || slot[c] >= 0) {
            PyErr_SetString(PyExc_ValueError, "wanted: distinct column indices below ncols");
            goto done;
        }
        slot[c] = (int)j;
    }
    const char *p = view.buf, *end = p + view.len;
    Py_ssize_t rows;
    Py_BEGIN_ALLOW_THREADS
    rows = count_lines(p, end);
    Py_END_ALLOW_THREADS
    if (rows == 0 || end[-1] != '\n') {
        result = Py_NewRef(Py_None);
        goto done;
    }
    data = output(rows * k * (Py_ssize_t)sizeof(double));
    if (!data)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(data);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = parse_rows(p, end, rows, ncols, slot, out);
    Py_END_ALLOW_THREADS
    result = status == 0 ? Py_BuildValue("nO", rows, data) : Py_NewRef(Py_None);
done:
    Py_XDECREF(data);
    PyMem_Free(slot);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", parse, METH_VARARGS,
     "parse(block, ncols, wanted) -> (rows, bytearray) | None: the wanted columns of a block of\n"
     "plain decimal numbers as column-major doubles, or None if the block is not that simple."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csvfast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__csvfast(void)
{
    POW5[0] = 1;
    for (int i = 1; i <= MAX_EXP10; i++) {
        POW5[i] = POW5[i - 1] * 5;
        BITS5[i] = bit_length(POW5[i]);
        RECIP5[i] = (uint64_t)(((u128)1 << (63 + BITS5[i])) / POW5[i]);
    }
    return PyModule_Create(&module);
}
