/* The CSV reader's fast path: a block of plain decimal numbers, one row a line, no quotes.
 *
 * parse(block, ncols, wanted) -> (rows, bytearray of rows * len(wanted) doubles, column-major),
 * or None when the block is not of that plain kind: the caller then parses it the general way,
 * which also finds and names what is wrong. Every value is the double float() gives (correctly
 * rounded). The few numbers this code does not convert itself (over 19 significant digits, a
 * decimal exponent past +27 once the point is moved to the end of the digits, a result below
 * 2^-1022) are converted by Python's own PyOS_string_to_double once the block is through. A block
 * with too many of them (1 cell in 8), a number too large for a double or an exponent of 7
 * digits is not plain.
 *
 * drop_spares() lets go of the output buffers kept for reuse (see output()).
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

#define MAX_DIGITS 19     /* 10^19 < 2^64: the significand is exact in a uint64 */
#define MAX_EXP10 27      /* 5^27 < 2^63: exact, and m * 5^27 < 2^127 */
#define MAX_NEG_EXP10 350 /* m 10^-350 < 2^-1074 for every m < 2^64: beyond, Python converts */

static uint64_t POW5[MAX_EXP10 + 1];
/* 5^-k ~ RECIP5[k] 2^-SHIFT5[k], RECIP5[k] in [2^63, 2^64), less than 2 below the true value */
static uint64_t RECIP5[MAX_NEG_EXP10 + 1];
static int SHIFT5[MAX_NEG_EXP10 + 1];

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
static __attribute__((noinline, cold)) double scale_pow10_exact(uint64_t m, int e)
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

/* m 10^-k, 1 <= k <= MAX_NEG_EXP10, correctly rounded: the normalised m times the 64-bit
 * reciprocal R of 5^k (less than 2 below the true R'). The true product P' = m R' lies in
 * [P, P + 2^65), so its top 64 bits are hi, hi + 1 or hi + 2; only when the bits below the
 * mantissa are that close to half way is the difference decisive, and then the exact division
 * decides (k <= 27). NaN when it cannot decide, or the double is not normal. */
static double div_pow10(uint64_t m, int k)
{
    int lz = __builtin_clzll(m);
    u128 P = (u128)(m << lz) * RECIP5[k];
    uint64_t hi = (uint64_t)(P >> 64);
    int sh = 10 + (int)(hi >> 63); /* hi has 63 or 64 bits; keep 53 */
    uint64_t mant = hi >> sh, rest = hi & ((1ULL << sh) - 1), half = 1ULL << (sh - 1);
    int e2 = sh + 64 - lz - SHIFT5[k] - k;
    if (__builtin_expect(rest + 2 >= half && rest <= half, 0))
        return k > MAX_EXP10 ? NAN : scale_pow10_exact(m, -k);
    if (__builtin_expect(e2 + 1075 < 1, 0)) /* below the normal range */
        return NAN;
    return make_double(mant + (rest > half), e2);
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
static __attribute__((noinline, cold)) int significant_digits(const char *p, const char *end)
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
 * in *v, or NaN when Python must convert it. Returns the end of the number, or NULL if it is not
 * one. */
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
    int many = 0; /* significant digits past 19 */
    if (n > MAX_DIGITS) {
        many = significant_digits(start, p) > MAX_DIGITS;
        m = 0; /* the digits again, leading zeros skipped: no wrap */
        for (const char *q = start; q < p && !many; q++)
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
    if (many)
        r = NAN;
    else if (m == 0)
        r = 0.0;
    else if (e < 0 && e >= -MAX_NEG_EXP10)
        r = div_pow10(m, (int)-e);
    else if (e == 0 && m <= (1ULL << 53))
        r = (double)m;
    else if (e >= 0 && e <= MAX_EXP10)
        r = scale_pow10_exact(m, (int)e);
    else
        r = NAN;
    *v = neg ? -r : r;
    return p;
}

/* Cells left to Python: where their text is and where their value goes. */
typedef struct {
    Py_ssize_t index; /* in the output */
    const char *text;
    int len;
} Cell;

typedef struct {
    Py_ssize_t n, cap, limit;
    Cell *cells;
} Later;

static __attribute__((noinline, cold)) int later_add(Later *w, Py_ssize_t index, const char *text,
                                                     const char *text_end)
{
    if (w->n == w->limit || text_end - text > 1000)
        return -1;
    if (w->n == w->cap) {
        Py_ssize_t cap = w->cap ? 2 * w->cap : 64;
        Cell *cells = PyMem_RawRealloc(w->cells, cap * sizeof(Cell));
        if (!cells)
            return -1;
        w->cells = cells;
        w->cap = cap;
    }
    w->cells[w->n++] = (Cell){index, text, (int)(text_end - text)};
    return 0;
}

/* The cells left to Python, converted by it (with the GIL): -1 if one is not finite. */
static int later_convert(Later *w, double *out)
{
    char buf[1001];
    for (Py_ssize_t i = 0; i < w->n; i++) {
        Cell cell = w->cells[i];
        memcpy(buf, cell.text, cell.len);
        buf[cell.len] = '\0';
        char *stop;
        double x = PyOS_string_to_double(buf, &stop, NULL);
        if (x == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        if (stop != buf + cell.len || !isfinite(x))
            return -1;
        out[cell.index] = x;
    }
    return 0;
}

/* Rows of ncols cells, each ended by ',' (the last by '\n' or "\r\n"); slot[c] >= 0: cell c is
 * a number for output column slot[c], spaces and tabs around it allowed; -1: any text without
 * quotes, '\r', NUL or delimiters. */
static int parse_rows(const char *p, const char *end, Py_ssize_t rows, int ncols, const int *slot, double *out,
                      Later *later)
{
    for (Py_ssize_t row = 0; row < rows; row++) {
        for (int c = 0; c < ncols; c++) {
            if (slot[c] >= 0) { /* blanks around the number, as float(cell.strip()) allows */
                while (p < end && (*p == ' ' || *p == '\t'))
                    p++;
                const char *text = p;
                double *v = &out[slot[c] * rows + row];
                p = number(p, end, v);
                if (!p || (__builtin_expect(isnan(*v), 0) && later_add(later, v - out, text, p) < 0))
                    return -1; /* NaN: a number for Python to convert */
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
    Later later = {0, 0, rows * k / 8 + 64, NULL}; /* more: polars is faster */
    Py_BEGIN_ALLOW_THREADS
    status = parse_rows(p, end, rows, ncols, slot, out, &later);
    Py_END_ALLOW_THREADS
    if (status == 0)
        status = later_convert(&later, out);
    PyMem_RawFree(later.cells);
    result = status == 0 ? Py_BuildValue("nO", rows, data) : Py_NewRef(Py_None);
done:
    Py_XDECREF(data);
    PyMem_Free(slot);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *drop_spares(PyObject *self, PyObject *unused)
{
    for (int i = 0; i < SPARES; i++)
        Py_CLEAR(spare[i]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"drop_spares", drop_spares, METH_NOARGS, "drop_spares(): let go of the output buffers kept for reuse."},
    {"parse", parse, METH_VARARGS,
     "parse(block, ncols, wanted) -> (rows, bytearray) | None: the wanted columns of a block of\n"
     "plain decimal numbers as column-major doubles, or None if the block is not that simple."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csvfast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__csvfast(void)
{
    POW5[0] = 1;
    for (int i = 1; i <= MAX_EXP10; i++)
        POW5[i] = POW5[i - 1] * 5;
    /* 5^-k = M 2^-E with M in [2^127, 2^128): M <- floor(M 2^t / 5), t = 2 or 3 keeping the top bit.
     * Each step truncates less than 1 of M's 2^128, so M ends less than 2k below the truth and its
     * top 64 bits less than 2 below. */
    u128 M = (u128)1 << 127;
    int E = 127;
    RECIP5[0] = 1ULL << 63;
    SHIFT5[0] = 63;
    for (int k = 1; k <= MAX_NEG_EXP10; k++) {
        int t = M >= ((u128)5 << 125) ? 2 : 3; /* M 2^t / 5 in [2^127, 2^128) */
        uint64_t top = (uint64_t)(M >> (128 - t));
        u128 low = M << t; /* M 2^t = top 2^128 + low, divided by 5 a 64-bit limb at a time */
        u128 cur = ((u128)top << 64) | (uint64_t)(low >> 64);
        uint64_t q1 = (uint64_t)(cur / 5);
        cur = ((u128)(uint64_t)(cur % 5) << 64) | (uint64_t)low;
        M = ((u128)q1 << 64) | (uint64_t)(cur / 5);
        E += t;
        RECIP5[k] = (uint64_t)(M >> 64);
        SHIFT5[k] = E - 64;
    }
    return PyModule_Create(&module);
}
