/* serde_kit._reader: the optional compiled reader of the fast read path.
 *
 * It decodes one whole msgpack row into Python values, as the msgspec
 * decoder of the pure path does, and builds the typed values (exts) whose
 * envelope head (ext code, array header, module and name, byte for byte)
 * Python registered after the allowlist allowed them.  It never imports or
 * resolves a name: everything it builds comes from objects Python handed it.
 *
 * What it does not handle it hands back, never the reverse:
 *  - an ext it has no entry for (first sight, blocked, numpy, delta ...) goes
 *    to the Python ext hook of that nesting level, with the payload as a
 *    memoryview, exactly as msgspec would call it;
 *  - bytes it cannot read (malformed, truncated, a map key that is not a
 *    string, number, nil, bool or bin, a timestamp) inside an ext payload go
 *    to that ext's Python hook, and at the top level the whole row goes to the
 *    msgspec decoder, so every error a row ends in is the pure path's own (with
 *    the work meter put back where it stood before this reader's first call into
 *    Python: the row is charged once, as on the pure path);
 *  - a rebuilder that fails (not with serde_kit's own error) is followed, as on the pure
 *    path's hot path, by the decoder's checked path (construct) with the same envelope;
 *  - a RecursionError anywhere sends the whole row to msgspec.  The reader
 *    charges the recursion counter once per container (as msgspec does) and
 *    EXT_FRAMES times per ext it builds (at least the Python frames the pure
 *    path spends on one), so it never succeeds where the pure path runs out.
 *
 * A reader made with `track` (the decoder's hash counter, for rows that may hold a
 * big map) counts every hashable typed value it builds whose type is not in `keyed`,
 * as the pure path's tracking hooks do; values the hooks build they count themselves.
 *
 * decode_checked reads a row the pure path prescans first (serde_kit._prescan: containers,
 * array-key floods, timestamps, whether to track typed values' hashes), and runs that same
 * prescan (fallback.check) only when the row needs it: before its first call into Python
 * (a hook, a rebuilder, whatever msgspec reads after it), before it hands the row back,
 * before it raises, and when its own counts say the prescan could refuse the row (more
 * maps and arrays than max_containers, counted as the prescan's walk counts them: every
 * map and array, envelope heads and a plain numpy array's two included) or track it (more
 * hashable typed values of unkeyed types than max_hash_collisions: the pure path may count
 * their hashes, so a tracked row is read again by fallback.tracked), and at the first float
 * key of a map the prescan checks (below).  A row read wholly in C without any of these
 * would pass the prescan: what it could refuse there is built only by msgspec (array keys,
 * timestamps) or counted here; of the map keys this reader builds itself, only floats can
 * be aimed at one hash beyond a small bound:
 *  - str and bin keys hash with SipHash, keyed per process (unless the operator fixes
 *    PYTHONHASHSEED; even then a full 64-bit collision costs ~2^64 work per key);
 *  - nil and bool equal 0 and 1 (one key each); ints hash as x mod 2^61-1 (negated for
 *    x < 0), so of msgpack's ints (-2^63 to 2^64) at most 13 share a hash value (hash 0:
 *    0, M .. 8M and -M .. -4M; any other value at most 9), and an int and a float of equal
 *    value are one key;
 *  - floats are NOT so few: p * 2^e hashes as p * 2^(e mod 61) mod 2^61-1, so the ~34
 *    exponents of one residue share a hash, and a hash value whose 61-bit word has six set
 *    bits 9 apart has six odd mantissas below 2^53: 202 distinct doubles share it
 *    (measured: one dict of them takes 515 us against 7 us for 202 random floats, ~255 ns
 *    per stored byte).  So in a map the prescan checks (CHECKED_ENTRIES entries or more,
 *    fewer under a lowered max_hash_collisions) the first float key runs the row's
 *    prescan (decode_map), which hashes that map's keys as the pure path's does: more than
 *    max_hash_collisions of one hash refused, colliding pairs charged to the work meter.
 *    A smaller map compares at most 105 pairs, ~25 ns each, bounded per stored byte.
 *
 * Every length is checked against the bytes left before anything is read or
 * allocated.  Decode functions return a new reference, or NULL: with an
 * exception set (a real error, raised as is) or without one ("soft": the
 * bytes are not what this reader takes; the caller hands them to Python).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stddef.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define EXT_FRAMES 10
#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define NOINLINE __declspec(noinline)
#else
#define NOINLINE
#endif
#define NUMPY_ARRAY 6 /* serde_kit.ext.codes.NUMPY_ARRAY */
#define TABLE_SLOTS 1024 /* a power of two */
#define MAX_ENTRIES 512  /* at most half the slots: probes stay short */
#define CHECKED_ENTRIES 16 /* serde_kit._prescan.CHECKED_ENTRIES: maps the prescan checks the keys of */

enum {
    KIND_CALL = 0,     /* fn(env): the Python rebuilder the allowlist's verdict chose */
    KIND_TUPLE = 1,    /* tuple(env[2]) for a list */
    KIND_INTS3 = 2,    /* cls(a, b, c) for three exact ints: date, timedelta */
    KIND_DATETIME = 3, /* cls(*env[2]) for 8 items, the last None or of a type in param */
    KIND_UUID = 4,     /* object.__new__(cls), int from 32 hex digits, is_safe = param */
    KIND_ENUM = 5,     /* param[env[2]] for an exact str or int found in the member map param */
    KIND_DATACLASS = 6, /* object.__new__(cls) + __dict__.update(env[2]) when its keys are param, in order */
    KIND_PYDANTIC = 7, /* cls.__pydantic_validator__.validate_python(env[2][, by_name=True if param]) */
    KIND_MESSAGE = 8,  /* a curated langchain-core message: env[2] installed as its state when it has
                        * the validated shape param describes (serde_kit.ext.langchain.fast_shape) */
    KIND_ISO = 9,      /* param[1](text) for an exact str of at most param[0] characters whose last 7
                        * hold no "." unless param[2] (date): fromisoformat, as the ext 3 rebuilder */
    KIND_DECIMAL = 10, /* cls(text) for an exact str of at most min(limit, 64) characters [+-]digits[.digits] */
    KIND_SET = 11,     /* cls(items) (set, frozenset) for a list of at most limit items, none a list */
    KIND_ZONE = 12,    /* the zone of an exact str of at most limit characters from param (limit, dict): the
                        * zones the Python rebuilder loaded (ZoneInfo); any other key goes to it */
    KIND_DEQUE = 13,   /* cls(items) for a list (ext 0), cls(items, maxlen) for [list, None or int] (ext 1) */
    KIND_PATH = 14,    /* cls(*parts) for a list of str: a pathlib class's own constructor; param True for a
                        * POSIX class, False, or (3.11) a POSIX class's _from_parsed_parts (posix_parsed_path) */
    KIND_LAST = 14
};
/* KIND_ISO, DECIMAL, SET and ZONE carry one limit (Entry.limit): what the Python rebuilder
 * checks first; beyond it, and on any failure, that rebuilder decides (and raises). */

/* The checks of a curated message's fields (serde_kit.ext.langchain.CHECKS, same names). */
enum {
    CHECK_ANY = 0,
    CHECK_TYPE = 1, /* an exact str equal to the class's "type" */
    CHECK_DICT = 2,
    CHECK_STR = 3,
    CHECK_STR_OR_NONE = 4,
    CHECK_CONTENT = 5,     /* a str, or a list of exact str and dict items */
    CHECK_TOOL_STATUS = 6, /* "success" or "error" */
    CHECK_TOOL_CALLS = 7,
    CHECK_INVALID_TOOL_CALLS = 8,
    CHECK_USAGE = 9,
    CHECK_LAST = 9
};
static const char *check_names[] = {"any", "type", "dict", "str", "str_or_none", "content", "tool_status",
                                    "tool_calls", "invalid_tool_calls", "usage"};
/* A C kind builds from env[2]; any other shape, or a failure its Python rebuilder would
 * handle, goes to that rebuilder (fn), as the pure path's hot path calls it. */

typedef struct {
    PyObject *head;   /* bytes: the payload's first bytes up to the end of the name; NULL = free */
    uint64_t hash;
    int code;
    int kind;
    Py_ssize_t nitems;
    PyObject *method; /* str or NULL: env[3] must equal it (ext code 3) */
    PyObject *module; /* str: env[0] */
    PyObject *name;   /* str: env[1] */
    PyObject *fn;
    PyObject *cls;
    PyObject *param;
    Py_ssize_t limit; /* KIND_ISO, DECIMAL, SET, ZONE: see the kinds */
    PyObject *names;  /* KIND_MESSAGE: frozenset of its field names (each message's fields set is a copy) */
    PyObject *checks; /* KIND_MESSAGE: bytes, the check of each field (param[1] as one byte each) */
    int text_hash;    /* KIND_DECIMAL: the hash of what it builds is computed from the text (decimal_text_hash) */
    PyObject *built;  /* borrowed: the type its C kind builds (cls, tuple for KIND_TUPLE), or NULL */
    int built_keyed;  /* whether `built` is in the reader's keyed types (asked once, at registration) */
} Entry;

/* A dtype spec plain_array met before, with what it checked of that dtype (immutable):
 * the next array of that spec skips the spec's str, the dict lookup and two attributes. */
#define KNOWN_DTYPES 8 /* a power of two */
#define KNOWN_SPEC_MAX 24
typedef struct {
    PyObject *dtype; /* NULL: a free slot */
    Py_ssize_t itemsize;
    Py_ssize_t spec_len;
    unsigned char spec[KNOWN_SPEC_MAX];
} KnownDtype;

typedef struct {
    PyObject_HEAD
    PyObject *fallback;    /* the msgspec decoder of the pure path (top level) */
    PyObject *hooks;       /* tuple: the Python ext hook of each nesting level */
    PyObject *learn;       /* callable(code, head, view) after a hook built a value, or None */
    PyObject *construct;   /* callable(code, env): the pure path's checked path after a failed rebuild */
    PyObject *track;       /* callable(value) counting a typed value's hash (rows that may flood), or None */
    PyObject *keyed;       /* frozenset: types whose hash is keyed per process (never tracked) */
    PyObject *serde_error; /* the base class of the errors the pure path raises on purpose */
    PyObject *np_empty;    /* numpy.empty once Python enabled arrays (set_numpy), else NULL */
    PyObject *np_dtypes;   /* dict: dtype spec -> numpy dtype, filled only by serde_kit.ext.numpy */
    KnownDtype np_known[KNOWN_DTYPES]; /* dtypes of np_dtypes plain_array checked (itemsize, no objects) */
    Py_ssize_t np_max_elements; /* Limits.max_array_elements */
    Py_ssize_t np_max_payload;  /* payloads this long or longer: the Python fast path for large arrays */
    Py_ssize_t max_ext_depth;
    Py_ssize_t max_containers; /* Limits.max_containers (set_row_limits; decode_checked) */
    Py_ssize_t max_typed;      /* Limits.max_hash_collisions (set_row_limits; decode_checked) */
    int safe_recursion_limit;
    Py_ssize_t nentries;
    Entry table[TABLE_SLOTS];
} Reader;

typedef struct {
    Py_hash_t hash;
    Py_ssize_t count; /* 0: an empty slot */
} HashGroup;

typedef struct {
    Reader *r;
    PyObject *src;            /* the row object */
    const unsigned char *base; /* its first byte */
    PyObject *view;           /* memoryview of the row, made on the first hook call */
    PyObject *mark;           /* fallback.mark() before this row's first Python call, or NULL */
    int lazy;                 /* decode_checked: the prescan is this reader's to run (fallback.check) */
    int checked;              /* ... and it has run */
    Py_ssize_t containers;    /* maps and arrays read in C so far (lazy rows, before the prescan) */
    Py_ssize_t typed;         /* hashable typed values of unkeyed Python-level types built in C (idem) */
    HashGroup *groups;        /* ... and the hash groups of the C-level ones (count_hash), or NULL */
    Py_ssize_t groups_size, groups_used, probes;
} State;

static PyObject *decode_value(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t level);

static PyObject *str_int, *str_is_safe, *str_dict, *str_validator, *str_validate_python, *str_by_name;
static PyObject *str_fields_set, *str_extra, *str_private, *str_tool_call, *str_invalid_tool_call, *str_success,
    *str_error, *str_tool_calls, *str_name, *str_args, *str_id, *str_type, *str_additional_kwargs, *str_tzinfo, *str_itemsize, *str_hasobject, *str_dtype;
static PyObject *empty_tuple;
static PyObject *str_check, *str_tracked, *str_decode, *str_mark, *str_redo;
/* Raised (in C only, never through a Python frame) when the prescan of a lazy row says
 * its typed values must be hash-tracked: the row is read again by fallback.tracked. */
static PyObject *Retrack;
static PyObject *by_name_kwnames; /* ("by_name",) */

/* Short map keys, kept with their hash: rows repeat the same few field names. */
#define KEY_CACHE_BITS 9
#define KEY_CACHE_SIZE (1 << KEY_CACHE_BITS)
#define KEY_CACHE_MAX_LEN 24
static PyObject *key_cache[KEY_CACHE_SIZE];

/* --- reading ------------------------------------------------------------- */

static inline uint16_t be16(const unsigned char *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t be64(const unsigned char *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

/* The length a str/bin/array/map/ext header at *pp stores in `width` bytes; 0 when short. */
static inline int read_length(const unsigned char **pp, const unsigned char *end, int width, Py_ssize_t *out) {
    const unsigned char *p = *pp;
    if (end - p < width) return 0;
    if (width == 1) *out = p[0];
    else if (width == 2) *out = be16(p);
    else *out = (Py_ssize_t)be32(p);
    *pp = p + width;
    return 1;
}

static PyObject *make_str(const unsigned char *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    /* ASCII test eight bytes at a time (memcpy: no unaligned or aliased read) */
    for (; i + 8 <= n; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        if (word & 0x8080808080808080ULL) break;
    }
    for (; i < n; i++) {
        if (p[i] & 0x80) break;
    }
    if (i == n) {
        PyObject *s = PyUnicode_New(n, 127);
        if (s == NULL) return NULL;
        memcpy(PyUnicode_DATA(s), p, (size_t)n);
        return s;
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)p, n, NULL);
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear(); /* invalid UTF-8: soft, the pure path reports it */
    }
    return s;
}

static inline uint64_t load64(const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}
static inline uint32_t load32(const unsigned char *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* The key cache's slot for the n bytes at p (1 <= n <= KEY_CACHE_MAX_LEN): whole words,
 * the last one overlapping the one before, never a byte past p + n. */
static inline PyObject **key_slot(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    if (n >= 8) {
        for (Py_ssize_t i = 0; i + 8 < n; i += 8) h = (h ^ load64(p + i)) * 0xff51afd7ed558ccdULL;
        h = (h ^ load64(p + n - 8)) * 0xff51afd7ed558ccdULL;
    } else if (n >= 4) {
        h = (h ^ ((uint64_t)load32(p) << 32 | load32(p + n - 4))) * 0xff51afd7ed558ccdULL;
    } else {
        h = (h ^ ((uint64_t)p[0] << 16 | (uint64_t)p[n / 2] << 8 | p[n - 1])) * 0xff51afd7ed558ccdULL;
    }
    /* the slot from the top bits of one more product: they depend on every bit before
     * (a product's low bits only on the factors' low bits) */
    h ^= h >> 32;
    return &key_cache[(h * 0x9E3779B97F4A7C15ULL) >> (64 - KEY_CACHE_BITS)];
}

/* Whether the n bytes at a and b are equal (1 <= n <= KEY_CACHE_MAX_LEN), as key_slot reads them. */
static inline int same_key_bytes(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    if (n >= 8) {
        for (Py_ssize_t i = 0; i + 8 < n; i += 8) {
            if (load64(a + i) != load64(b + i)) return 0;
        }
        return load64(a + n - 8) == load64(b + n - 8);
    }
    if (n >= 4) return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i] != b[i]) return 0;
    }
    return 1;
}

static PyObject *make_key(const unsigned char *p, Py_ssize_t n) {
    if (n == 0 || n > KEY_CACHE_MAX_LEN) return make_str(p, n);
    PyObject **slot = key_slot(p, n);
    PyObject *found = *slot;
    if (found != NULL && PyUnicode_GET_LENGTH(found) == n &&
        same_key_bytes((const unsigned char *)PyUnicode_DATA(found), p, n)) {
        return Py_NewRef(found);
    }
    PyObject *s = make_str(p, n);
    if (s == NULL || !PyUnicode_IS_ASCII(s)) return s; /* only ASCII keys: their length is their size */
    if (PyObject_Hash(s) == -1) {
        Py_DECREF(s);
        return NULL;
    }
    Py_XSETREF(*slot, Py_NewRef(s));
    return s;
}

/* Put a field name Python registered into the key cache, so that keys read with its
 * text are that very object and field checks match by pointer (same_str).  Only what
 * make_key itself would cache; a later key of another text may take the slot back
 * (checks then compare text, as before). */
static int seed_key(PyObject *name) {
    if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    if (n == 0 || n > KEY_CACHE_MAX_LEN) return 0;
    PyObject **slot = key_slot((const unsigned char *)PyUnicode_DATA(name), n);
    if (PyObject_Hash(name) == -1) return -1;
    Py_XSETREF(*slot, Py_NewRef(name));
    return 0;
}

/* seed_key for each str of a tuple (others are skipped). */
static int seed_keys(PyObject *names) {
    if (!PyTuple_CheckExact(names)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (seed_key(PyTuple_GET_ITEM(names, i)) < 0) return -1;
    }
    return 0;
}

/* --- the table of envelope heads ---------------------------------------- */

static uint64_t head_hash(int code, const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(unsigned)code;
    h *= 1099511628211ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static Entry *table_find(Reader *r, int code, const unsigned char *p, Py_ssize_t n, uint64_t h) {
    size_t slot = (size_t)h & (TABLE_SLOTS - 1);
    for (;;) {
        Entry *e = &r->table[slot];
        if (e->head == NULL) return NULL;
        if (e->hash == h && e->code == code && PyBytes_GET_SIZE(e->head) == n &&
            memcmp(PyBytes_AS_STRING(e->head), p, (size_t)n) == 0) {
            return e;
        }
        slot = (slot + 1) & (TABLE_SLOTS - 1);
    }
}

/* --- handing an ext to Python ------------------------------------------- */

static PyObject *payload_view(State *st, const unsigned char *p, Py_ssize_t n) {
    if (st->view == NULL) {
        st->view = PyMemoryView_FromObject(st->src);
        if (st->view == NULL) return NULL;
    }
    Py_ssize_t start = p - st->base;
    return PySequence_GetSlice(st->view, start, start + n);
}

/* A lazy row (decode_checked) runs the pure path's whole-row prescan here, once: before
 * its first call into Python, before it hands the row back, and when its own counts say
 * the prescan could refuse it (more containers than max_containers, or more hashable
 * typed values than max_hash_collisions that the prescan might want tracked).  The pure
 * path runs it before the decode: so its errors come first here too, and its walk is
 * charged before anything else of the row is.  -1 with an error set (Retrack when the
 * row must be read again with hash tracking). */
static int ensure_prescan(State *st) {
    if (!st->lazy || st->checked) return 0;
    st->checked = 1;
    PyObject *tracked = PyObject_CallMethodOneArg(st->r->fallback, str_check, st->src);
    if (tracked == NULL) return -1;
    int track = PyObject_IsTrue(tracked);
    Py_DECREF(tracked);
    if (track < 0) return -1;
    if (track) {
        PyErr_SetNone(Retrack);
        return -1;
    }
    return 0;
}

/* Before the row's first call into Python that may charge the work meter: where the
 * meter stands, so that handing the row to the fallback re-reads it from there (the
 * pure path charges each step of a row once). */
static int mark_meter(State *st) {
    if (ensure_prescan(st) < 0) return -1;
    if (st->mark == NULL) st->mark = PyObject_CallMethodNoArgs(st->r->fallback, str_mark);
    return st->mark == NULL ? -1 : 0;
}

static PyObject *call_hook(State *st, int code, const unsigned char *p, Py_ssize_t n, Py_ssize_t level,
                           const unsigned char *head_end) {
    Reader *r = st->r;
    if (mark_meter(st) < 0) return NULL;
    PyObject *view = payload_view(st, p, n);
    if (view == NULL) return NULL;
    PyObject *code_obj = PyLong_FromLong(code);
    if (code_obj == NULL) {
        Py_DECREF(view);
        return NULL;
    }
    PyObject *args[2] = {code_obj, view};
    PyObject *value = PyObject_Vectorcall(PyTuple_GET_ITEM(r->hooks, level), args, 2, NULL);
    if (value != NULL && code == NUMPY_ARRAY && r->np_empty == NULL && r->learn != Py_None) {
        /* the first array the hook built: Python may enable arrays now (numpy is imported) */
        PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);
        PyObject *done = NULL;
        if (empty != NULL) {
            PyObject *largs[3] = {code_obj, empty, view};
            done = PyObject_Vectorcall(r->learn, largs, 3, NULL);
            Py_DECREF(empty);
        }
        if (done == NULL) Py_CLEAR(value);
        Py_XDECREF(done);
    }
    if (value != NULL && head_end != NULL && r->learn != Py_None && r->nentries < MAX_ENTRIES) {
        PyObject *head = PyBytes_FromStringAndSize((const char *)p, head_end - p);
        PyObject *done = NULL;
        if (head != NULL) {
            PyObject *largs[3] = {code_obj, head, view};
            done = PyObject_Vectorcall(r->learn, largs, 3, NULL);
            Py_DECREF(head);
        }
        if (done == NULL) Py_CLEAR(value);
        Py_XDECREF(done);
    }
    Py_DECREF(code_obj);
    Py_DECREF(view);
    return value;
}

/* After a rebuild failed: whether the hook should rebuild it instead (the pure path's
 * hot path does so for every Exception but its own errors; a RecursionError ends
 * this reader's attempt at the whole row). */
static int retry_in_python(Reader *r) {
    if (PyErr_ExceptionMatches(PyExc_RecursionError) || PyErr_ExceptionMatches(r->serde_error) ||
        !PyErr_ExceptionMatches(PyExc_Exception)) {
        return 0;
    }
    PyErr_Clear();
    return 1;
}

static int enter_ext(void) {
    for (int i = 0; i < EXT_FRAMES; i++) {
        if (Py_EnterRecursiveCall(" while decoding a stored value")) {
            while (i-- > 0) Py_LeaveRecursiveCall();
            return -1;
        }
    }
    return 0;
}

static void leave_ext(void) {
    for (int i = 0; i < EXT_FRAMES; i++) Py_LeaveRecursiveCall();
}

static int exact_int(PyObject *o) { return Py_IS_TYPE(o, &PyLong_Type); }

/* The first n items of a list of exact ints as C ints; 0 when one does not fit an int. */
static int c_ints(PyObject *list, int *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        if (!exact_int(o)) return 0;
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(o, &overflow);
        if (overflow || v < INT_MIN || v > INT_MAX) return 0;
        out[i] = (int)v;
    }
    return 1;
}

static int hex_digit(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static signed char hex_values[256]; /* hex_digit of each byte (init_hex_values) */

static void init_hex_values(void) {
    for (int ch = 0; ch < 256; ch++) hex_values[ch] = (signed char)hex_digit((unsigned char)ch);
}

/* --- curated langchain-core messages -------------------------------------------
 *
 * The same shape test as serde_kit.ext.langchain.fast_builder, or a stricter one: what
 * this accepts, the Python builder accepts too (where its checks take several key
 * orders, this takes the ones validation leaves without extra keys); what it does not
 * accept goes to the Python rebuilder, which decides.  No check calls Python code: every
 * dict it reads was decoded here (keys are strings, numbers, nil, bool or bin). */

/* o is the exact str s (equal text): canonical strs of equal text have the same kind. */
static int same_str(PyObject *o, PyObject *s) {
    if (o == s) return 1;
    if (!PyUnicode_CheckExact(o)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(o);
    return n == PyUnicode_GET_LENGTH(s) && PyUnicode_KIND(o) == PyUnicode_KIND(s) &&
           memcmp(PyUnicode_DATA(o), PyUnicode_DATA(s), (size_t)n * PyUnicode_KIND(o)) == 0;
}

static int str_or_none(PyObject *o) { return o == Py_None || PyUnicode_CheckExact(o); }

/* A dict whose keys are exactly `keys`, in that order. */
static int has_keys(PyObject *d, PyObject *keys) {
    if (!PyDict_CheckExact(d) || PyDict_GET_SIZE(d) != PyTuple_GET_SIZE(keys)) return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(d, &pos, &key, &value)) {
        if (!same_str(key, PyTuple_GET_ITEM(keys, i++))) return 0;
    }
    return 1;
}

/* d's value under the str key (d has exact str keys only); NULL when absent. */
static PyObject *field(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* A token-details dict: some of `declared`, in declared order, each an exact int. */
static int int_details(PyObject *d, PyObject *declared) {
    if (!PyDict_CheckExact(d)) return 0;
    Py_ssize_t pos = 0, j = 0, n = PyTuple_GET_SIZE(declared);
    PyObject *key, *value;
    while (PyDict_Next(d, &pos, &key, &value)) {
        while (j < n && !same_str(key, PyTuple_GET_ITEM(declared, j))) j++;
        if (j == n || !exact_int(value)) return 0;
        j++;
    }
    return 1;
}

/* usage_metadata: None, or the three token counts (exact ints) first, then some of the
 * detail dicts in declared order.  ai = (call, invalid, counts, details, declared). */
static int usage_shape(PyObject *v, PyObject *ai) {
    if (v == Py_None) return 1;
    if (!PyDict_CheckExact(v)) return 0;
    PyObject *counts = PyTuple_GET_ITEM(ai, 2), *details = PyTuple_GET_ITEM(ai, 3), *declared = PyTuple_GET_ITEM(ai, 4);
    Py_ssize_t ncounts = PyTuple_GET_SIZE(counts), ndetails = PyTuple_GET_SIZE(details);
    Py_ssize_t pos = 0, i = 0, j = 0;
    PyObject *key, *value;
    while (PyDict_Next(v, &pos, &key, &value)) {
        if (i < ncounts) {
            if (!same_str(key, PyTuple_GET_ITEM(counts, i)) || !exact_int(value)) return 0;
            i++;
            continue;
        }
        while (j < ndetails && !same_str(key, PyTuple_GET_ITEM(details, j))) j++;
        if (j == ndetails || !int_details(value, PyTuple_GET_ITEM(declared, j))) return 0;
        j++;
    }
    return i == ncounts;
}

static int tool_calls_shape(PyObject *v, PyObject *keys) {
    if (!PyList_CheckExact(v)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *call = PyList_GET_ITEM(v, i);
        if (!has_keys(call, keys)) return 0;
        PyObject *name = field(call, str_name), *args = field(call, str_args), *id = field(call, str_id),
                 *type = field(call, str_type);
        if (name == NULL || args == NULL || id == NULL || type == NULL) return 0;
        if (!PyUnicode_CheckExact(name) || !PyDict_CheckExact(args) || !str_or_none(id) || !same_str(type, str_tool_call)) {
            return 0;
        }
    }
    return 1;
}

static int invalid_tool_calls_shape(PyObject *v, PyObject *keys) {
    if (!PyList_CheckExact(v)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *call = PyList_GET_ITEM(v, i);
        if (!has_keys(call, keys)) return 0;
        PyObject *name = field(call, str_name), *args = field(call, str_args), *id = field(call, str_id),
                 *error = field(call, str_error), *type = field(call, str_type);
        if (name == NULL || args == NULL || id == NULL || error == NULL || type == NULL) return 0;
        if (!str_or_none(name) || !str_or_none(args) || !str_or_none(id) || !str_or_none(error) ||
            !same_str(type, str_invalid_tool_call)) {
            return 0;
        }
    }
    return 1;
}

static int content_shape(PyObject *v) {
    if (PyUnicode_CheckExact(v)) return 1;
    if (!PyList_CheckExact(v)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *part = PyList_GET_ITEM(v, i);
        if (!PyUnicode_CheckExact(part) && !PyDict_CheckExact(part)) return 0;
    }
    return 1;
}

/* param = (names, checks, expected_type, allows_extra, ai or None); see register. */
static int message_shape(PyObject *stored, PyObject *param, const char *check_codes) {
    PyObject *names = PyTuple_GET_ITEM(param, 0);
    PyObject *expected = PyTuple_GET_ITEM(param, 2), *ai = PyTuple_GET_ITEM(param, 4);
    if (!PyDict_CheckExact(stored) || PyDict_GET_SIZE(stored) != PyTuple_GET_SIZE(names)) return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *v, *tool_calls = NULL, *invalid = NULL, *kwargs = NULL;
    while (PyDict_Next(stored, &pos, &key, &v)) {
        if (!same_str(key, PyTuple_GET_ITEM(names, i))) return 0;
        int ok = 0;
        switch (check_codes[i]) {
        case CHECK_ANY: ok = 1; break;
        case CHECK_TYPE: ok = same_str(v, expected); break;
        case CHECK_DICT: ok = PyDict_CheckExact(v); break;
        case CHECK_STR: ok = PyUnicode_CheckExact(v); break;
        case CHECK_STR_OR_NONE: ok = str_or_none(v); break;
        case CHECK_CONTENT: ok = content_shape(v); break;
        case CHECK_TOOL_STATUS: ok = same_str(v, str_success) || same_str(v, str_error); break;
        case CHECK_TOOL_CALLS: ok = ai != Py_None && tool_calls_shape(v, PyTuple_GET_ITEM(ai, 0)); tool_calls = v; break;
        case CHECK_INVALID_TOOL_CALLS:
            ok = ai != Py_None && invalid_tool_calls_shape(v, PyTuple_GET_ITEM(ai, 1));
            invalid = v;
            break;
        case CHECK_USAGE: ok = ai != Py_None && usage_shape(v, ai); break;
        }
        if (!ok) return 0;
        if (same_str(key, str_additional_kwargs)) kwargs = v;
        i++;
    }
    if (ai != Py_None) {
        /* validation parses raw tool calls kept in additional_kwargs when no parsed one is stored */
        if (tool_calls == NULL || invalid == NULL || kwargs == NULL || !PyDict_CheckExact(kwargs)) return 0;
        if (PyList_GET_SIZE(tool_calls) == 0 && PyList_GET_SIZE(invalid) == 0) {
            int raw = PyDict_Contains(kwargs, str_tool_calls);
            if (raw != 0) return raw < 0 ? -1 : 0;
        }
    }
    return 1;
}

/* object.__setattr__(obj, name, value), with the step that one takes for a writable
 * object slot (a __slots__ member) done here: the same store, without the generic
 * call's overhead.  Anything else takes the generic path. */
static int set_attr(PyObject *obj, PyObject *name, PyObject *value) {
    PyObject *descr = _PyType_Lookup(Py_TYPE(obj), name); /* borrowed; the type's attribute cache */
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY) &&
            PyObject_TypeCheck(obj, ((PyDescrObject *)descr)->d_type)) {
            PyObject **slot = (PyObject **)((char *)obj + member->offset);
            Py_XSETREF(*slot, Py_NewRef(value));
            return 0;
        }
    }
    return PyObject_GenericSetAttr(obj, name, value);
}

/* The message object with `stored` as its state, as the Python fast builder makes it. */
static PyObject *install_message(Entry *e, PyObject *stored) {
    PyObject *obj = PyBaseObject_Type.tp_new((PyTypeObject *)e->cls, empty_tuple, NULL);
    if (obj == NULL) return NULL;
    PyObject *fields_set = PySet_New(e->names); /* a copy of a frozenset: its table, no rehashing */
    PyObject *extra = PyTuple_GET_ITEM(e->param, 3) == Py_True ? PyDict_New() : Py_NewRef(Py_None);
    if (fields_set == NULL || extra == NULL || PyObject_GenericSetAttr(obj, str_dict, stored) < 0 ||
        set_attr(obj, str_fields_set, fields_set) < 0 || set_attr(obj, str_extra, extra) < 0 ||
        set_attr(obj, str_private, Py_None) < 0) {
        Py_CLEAR(obj);
    }
    Py_XDECREF(fields_set);
    Py_XDECREF(extra);
    return obj;
}

/* Up to 6 ASCII digits at p as a number; -1 when one is not a digit. */
static int digits(const unsigned char *p, int n) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* cls.fromisoformat(text) for the forms isoformat() writes by default, read here:
 * a date "YYYY-MM-DD"; a datetime "YYYY-MM-DDTHH:MM:SS", with ".ffffff" and/or a
 * "+HH:MM" / "-HH:MM" offset (fromisoformat's UTC singleton for a zero offset, else
 * timezone(timedelta)).  NULL without an exception for any other text or class
 * (fromisoformat reads it); an error when the numbers are out of range (the caller's
 * Python rebuilder then reads it and raises its own). */
static PyObject *iso_canonical(PyObject *cls, PyObject *text) {
    if (!PyUnicode_IS_ASCII(text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const unsigned char *p = (const unsigned char *)PyUnicode_DATA(text);
    if (n < 10 || p[4] != '-' || p[7] != '-') return NULL;
    int year = digits(p, 4), month = digits(p + 5, 2), day = digits(p + 8, 2);
    if (year < 0 || month < 0 || day < 0) return NULL;
    if (cls == (PyObject *)PyDateTimeAPI->DateType) {
        if (n != 10) return NULL;
        return PyDateTimeAPI->Date_FromDate(year, month, day, PyDateTimeAPI->DateType);
    }
    if (cls != (PyObject *)PyDateTimeAPI->DateTimeType || (n != 19 && n != 25 && n != 26 && n != 32)) return NULL;
    if (p[10] != 'T' || p[13] != ':' || p[16] != ':') return NULL;
    int hour = digits(p + 11, 2), minute = digits(p + 14, 2), second = digits(p + 17, 2), micro = 0;
    if (hour < 0 || minute < 0 || second < 0) return NULL;
    Py_ssize_t at = 19;
    if (n == 26 || n == 32) {
        if (p[19] != '.' || (micro = digits(p + 20, 6)) < 0) return NULL;
        at = 26;
    }
    PyObject *tz = Py_None;
    if (at < n) { /* "+HH:MM" */
        if ((p[at] != '+' && p[at] != '-') || p[at + 3] != ':') return NULL;
        int oh = digits(p + at + 1, 2), om = digits(p + at + 4, 2);
        if (oh < 0 || om < 0 || oh > 23 || om > 59) return NULL;
        int offset = (oh * 3600 + om * 60) * (p[at] == '-' ? -1 : 1);
        if (offset == 0) {
            tz = Py_NewRef(PyDateTime_TimeZone_UTC);
        } else {
            PyObject *delta = PyDateTimeAPI->Delta_FromDelta(0, offset, 0, 1, PyDateTimeAPI->DeltaType);
            tz = delta == NULL ? NULL : PyDateTimeAPI->TimeZone_FromTimeZone(delta, NULL);
            Py_XDECREF(delta);
            if (tz == NULL) return NULL;
        }
    }
    PyObject *value = PyDateTimeAPI->DateTime_FromDateAndTime(year, month, day, hour, minute, second, micro, tz,
                                                              PyDateTimeAPI->DateTimeType);
    if (tz != Py_None) Py_DECREF(tz);
    return value;
}

#if PY_VERSION_HEX < 0x030C0000
/* The one text a POSIX path class parses to the same path as from the stored parts (its
 * .parts): cls(text) then makes the same object as cls(*parts) (3.11's pathlib keeps only
 * the parsed parts), in about a third of the Python work.  Only for parts pathlib's
 * parser reads the same joined: each non-empty, none after the first holding a "/", the
 * first a root ("/" or "//") or a name without "/".  NULL without an exception otherwise. */
static PyObject *posix_path_text(PyObject *parts) {
    static PyObject *slash = NULL;
    if (slash == NULL && (slash = PyUnicode_InternFromString("/")) == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(parts);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        Py_ssize_t len = PyUnicode_GET_LENGTH(part);
        if (len == 0) return NULL;
        Py_ssize_t found = PyUnicode_FindChar(part, '/', 0, len, 1);
        if (found == -2) return NULL;
        if (found == -1) continue;
        if (i > 0) return NULL;
        if (!(len <= 2 && PyUnicode_READ_CHAR(part, len - 1) == '/' && PyUnicode_READ_CHAR(part, 0) == '/')) return NULL;
    }
    PyObject *first = PyList_GET_ITEM(parts, 0);
    if (PyUnicode_READ_CHAR(first, 0) != '/') return PyUnicode_Join(slash, parts);
    PyObject *rest = PyList_GetSlice(parts, 1, n);
    if (rest == NULL) return NULL;
    PyObject *tail = PyUnicode_Join(slash, rest);
    Py_DECREF(rest);
    if (tail == NULL) return NULL;
    PyObject *text = PyUnicode_Concat(first, tail);
    Py_DECREF(tail);
    return text;
}
#endif

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define PARSED_PATHS 1
/* cls._from_parsed_parts(drv, root, parts): the path 3.11's cls(*parts) makes, without its
 * Python parser.  3.11's pathlib keeps a path as the parsed parts alone (drv, root and the
 * list of parts; str, hash and the other slots are computed from them when first asked
 * for), and for the stored parts of a POSIX path that its parser reads one by one (each
 * non-empty and not ".", none after the first holding a "/", the first a root "/" or "//"
 * or a name without "/") it makes: drv "", root the first part when it is a root (else ""),
 * and the parts themselves, interned as sys.intern interns them.  serde_kit.native hands
 * this method only for PosixPath and PurePosixPath whose constructor, parser and method
 * are pathlib's own.  NULL without an exception for other parts (cls(*parts) reads them). */
static PyObject *posix_parsed_path(PyObject *from_parsed, PyObject *stored) {
    static PyObject *empty = NULL, *root1 = NULL, *root2 = NULL;
    if (empty == NULL && (empty = PyUnicode_InternFromString("")) == NULL) return NULL;
    if (root1 == NULL && (root1 = PyUnicode_InternFromString("/")) == NULL) return NULL;
    if (root2 == NULL && (root2 = PyUnicode_InternFromString("//")) == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(stored);
    PyObject *root = empty;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = PyList_GET_ITEM(stored, i); /* an exact str (the caller checked) */
        Py_ssize_t len = PyUnicode_GET_LENGTH(part);
        if (len == 0 || (len == 1 && PyUnicode_READ_CHAR(part, 0) == '.')) return NULL;
        Py_ssize_t slash = PyUnicode_FindChar(part, '/', 0, len, 1);
        if (slash == -2) return NULL;
        if (slash == -1) continue;
        if (i > 0) return NULL;
        if (len == 1) root = root1;
        else if (len == 2 && PyUnicode_READ_CHAR(part, 0) == '/' && PyUnicode_READ_CHAR(part, 1) == '/') root = root2;
        else return NULL; /* "/a", "///", "a/b": the parser splits them */
    }
    PyObject *parts = PyList_New(n);
    if (parts == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *part = i == 0 && root != empty ? root : PyList_GET_ITEM(stored, i);
        Py_INCREF(part);
        PyUnicode_InternInPlace(&part);
        PyList_SET_ITEM(parts, i, part);
    }
    PyObject *args[3] = {empty, root, parts};
    PyObject *value = PyObject_Vectorcall(from_parsed, args, 3, NULL);
    Py_DECREF(parts);
    return value;
}
#else
#define PARSED_PATHS 0
#endif

/* --- numeric hashes computed from stored text ---------------------------------
 *
 * The hash of a Decimal is Python's numeric hash of its value (the language reference,
 * "Hashing of numeric types"): for m / 10**k, m * inverse(10)**k modulo the prime
 * 2**61 - 1, negated for a negative value, -1 becoming -2.  The reader needs the hash of
 * each Decimal it builds to count the row's typed values by hash (may_collide), and
 * Decimal's own __hash__ computes it with arbitrary-precision powers (~5 K instructions);
 * for the texts KIND_DECIMAL builds ([+-]digits[.digits], at most 64 characters) it is a
 * few multiplications here.  Only where the C compiler has 128-bit products and Python's
 * hash modulus is that prime; elsewhere (and when the check at registration finds the
 * classes' hash differs) the value's own hash is taken. */
#if defined(__SIZEOF_INT128__) && _PyHASH_BITS == 61
#define TEXT_HASH 1
#define HASH_PRIME (((uint64_t)1 << 61) - 1)
#define MAX_DECIMAL_TEXT 64 /* KIND_DECIMAL's own bound on the text */
static uint64_t inverse_ten_powers[MAX_DECIMAL_TEXT + 1]; /* 10**-k modulo the prime */

static inline uint64_t mul_mod_prime(uint64_t a, uint64_t b) { /* a, b below the prime */
    unsigned __int128 x = (unsigned __int128)a * b;
    uint64_t r = ((uint64_t)x & HASH_PRIME) + (uint64_t)(x >> 61); /* 2**61 = 1 modulo the prime */
    r = (r & HASH_PRIME) + (r >> 61);
    return r >= HASH_PRIME ? r - HASH_PRIME : r;
}

static void init_text_hash(void) {
    const uint64_t inverse_ten = 2075258708292324556ULL; /* pow(10, prime - 2, prime) */
    inverse_ten_powers[0] = 1;
    for (int k = 1; k <= MAX_DECIMAL_TEXT; k++) {
        inverse_ten_powers[k] = mul_mod_prime(inverse_ten_powers[k - 1], inverse_ten);
    }
}
#else
#define TEXT_HASH 0
static void init_text_hash(void) {}
#endif

/* hash(Decimal(text)) for an ASCII text of the form [+-]digits[.digits] (at least one
 * digit, at most 64 characters, as KIND_DECIMAL checks first); -1 when not computed here. */
static Py_hash_t decimal_text_hash(const char *text, Py_ssize_t n) {
#if TEXT_HASH
    if (n > MAX_DECIMAL_TEXT) return -1;
    Py_ssize_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0, fraction = -1;
    uint64_t m = 0; /* the digits as one integer, modulo the prime */
    for (; i < n; i++) {
        if (text[i] == '.') {
            if (fraction >= 0) return -1;
            fraction = 0;
            continue;
        }
        if (text[i] < '0' || text[i] > '9') return -1;
        m = mul_mod_prime(m, 10) + (uint64_t)(text[i] - '0');
        if (m >= HASH_PRIME) m -= HASH_PRIME;
        if (fraction >= 0) fraction++;
    }
    uint64_t h = mul_mod_prime(m, inverse_ten_powers[fraction > 0 ? fraction : 0]);
    Py_hash_t hash = text[0] == '-' ? -(Py_hash_t)h : (Py_hash_t)h;
    return hash == -1 ? -2 : hash;
#else
    (void)text;
    (void)n;
    return -1;
#endif
}

/* The value a C kind builds from its one argument; NULL without an exception = not this shape.
 * *hash is set to the value's hash when it comes cheaply with the build (Decimal, UUID),
 * and left alone otherwise.  Not inlined: its locals stay off the frames of the recursive
 * decode. */
static NOINLINE PyObject *build_kind(Entry *e, PyObject *arg, Py_hash_t *hash) {
    switch (e->kind) {
    case KIND_TUPLE:
        if (!PyList_CheckExact(arg)) return NULL;
        return PyList_AsTuple(arg);
    case KIND_INTS3: {
        if (!PyList_CheckExact(arg) || PyList_GET_SIZE(arg) != 3) return NULL;
        PyObject *a = PyList_GET_ITEM(arg, 0), *b = PyList_GET_ITEM(arg, 1), *c = PyList_GET_ITEM(arg, 2);
        if (!exact_int(a) || !exact_int(b) || !exact_int(c)) return NULL;
        int v[3];
        if (c_ints(arg, v, 3)) {
            /* what date(a, b, c) and timedelta(a, b, c) run after parsing their arguments */
            if (e->cls == (PyObject *)PyDateTimeAPI->DateType) {
                return PyDateTimeAPI->Date_FromDate(v[0], v[1], v[2], PyDateTimeAPI->DateType);
            }
            if (e->cls == (PyObject *)PyDateTimeAPI->DeltaType && v[1] >= 0 && v[1] < 86400 && v[2] >= 0 &&
                v[2] < 1000000 && v[0] >= -999999999 && v[0] <= 999999999) {
                /* already normalised and in range: the value timedelta's own arithmetic makes */
                return PyDateTimeAPI->Delta_FromDelta(v[0], v[1], v[2], 1, PyDateTimeAPI->DeltaType);
            }
        }
        return PyObject_CallFunctionObjArgs(e->cls, a, b, c, NULL);
    }
    case KIND_DATETIME: {
        if (!PyList_CheckExact(arg) || PyList_GET_SIZE(arg) != 8) return NULL;
        PyObject *tz = PyList_GET_ITEM(arg, 7);
        if (tz != Py_None) {
            int found = 0;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(e->param); i++) {
                if ((PyObject *)Py_TYPE(tz) == PyTuple_GET_ITEM(e->param, i)) found = 1;
            }
            if (!found) return NULL;
        }
        int v[7];
        if (e->cls == (PyObject *)PyDateTimeAPI->DateTimeType && c_ints(arg, v, 7)) {
            /* what datetime(*args) runs after parsing its arguments (fold 0) */
            return PyDateTimeAPI->DateTime_FromDateAndTime(v[0], v[1], v[2], v[3], v[4], v[5], v[6], tz,
                                                          PyDateTimeAPI->DateTimeType);
        }
        PyObject *args = PyList_AsTuple(arg);
        if (args == NULL) return NULL;
        PyObject *value = PyObject_Call(e->cls, args, NULL);
        Py_DECREF(args);
        return value;
    }
    case KIND_ENUM: {
        if (!PyUnicode_CheckExact(arg) && !PyLong_CheckExact(arg)) return NULL;
        PyObject *member = PyDict_GetItemWithError(e->param, arg);
        return member == NULL ? NULL : Py_NewRef(member);
    }
    case KIND_DATACLASS: {
        if (!PyDict_CheckExact(arg) || PyDict_GET_SIZE(arg) != PyTuple_GET_SIZE(e->param)) return NULL;
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *item;
        while (PyDict_Next(arg, &pos, &key, &item)) {
            /* the field names are exact str (register): same_str is the text comparison, and
             * mostly a pointer test, since the key cache holds these very names (seed_key) */
            if (!same_str(key, PyTuple_GET_ITEM(e->param, i++))) return NULL;
        }
        PyObject *value = PyBaseObject_Type.tp_new((PyTypeObject *)e->cls, empty_tuple, NULL);
        if (value == NULL) return NULL;
        PyObject *dict = PyObject_GetAttr(value, str_dict);
        if (dict == NULL || PyDict_Update(dict, arg) < 0) {
            Py_XDECREF(dict);
            Py_DECREF(value);
            return NULL;
        }
        Py_DECREF(dict);
        return value;
    }
    case KIND_PYDANTIC: {
        if (!PyDict_CheckExact(arg)) return NULL;
        PyObject *validator = PyObject_GetAttr(e->cls, str_validator);
        if (validator == NULL) return NULL;
        PyObject *args[3] = {validator, arg, Py_True};
        PyObject *value = PyObject_VectorcallMethod(str_validate_python, args, 2,
                                                    e->param == Py_True ? by_name_kwnames : NULL);
        Py_DECREF(validator);
        return value;
    }
    case KIND_ISO: {
        if (!PyUnicode_CheckExact(arg)) return NULL;
        Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
        if (n > e->limit) return NULL;
        PyObject *value = iso_canonical(e->cls, arg);
        if (value != NULL || PyErr_Occurred()) return value;
        value = PyObject_CallOneArg(PyTuple_GET_ITEM(e->param, 1), arg);
        if (value == NULL || PyTuple_GET_ITEM(e->param, 2) == Py_True) return value;
        /* An aware value whose text ends in a sub-second offset ("+00:00:00.000007"):
         * the Python rebuilder reads the offset from the text. */
        Py_ssize_t dot = PyUnicode_FindChar(arg, '.', n > 7 ? n - 7 : 0, n, 1);
        if (dot == -1) return value;
        PyObject *tz = dot == -2 ? NULL : PyObject_GetAttr(value, str_tzinfo);
        int naive = tz == Py_None;
        Py_XDECREF(tz);
        if (naive) return value;
        Py_DECREF(value);
        return NULL; /* an error, or aware: not this shape */
    }
    case KIND_DECIMAL: {
        if (!PyUnicode_CheckExact(arg) || !PyUnicode_IS_ASCII(arg)) return NULL;
        Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
        if (n == 0 || n > e->limit || n > 64) return NULL;
        const char *text = (const char *)PyUnicode_DATA(arg);
        Py_ssize_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0, digits = 0, points = 0;
        for (; i < n; i++) {
            if (text[i] >= '0' && text[i] <= '9') digits++;
            else if (text[i] == '.' && points == 0) points++;
            else return NULL; /* an exponent, NaN, Infinity, spaces, underscores: Python reads it */
        }
        if (digits == 0) return NULL;
        PyObject *value = PyObject_CallOneArg(e->cls, arg);
        if (value != NULL && e->text_hash && Py_TYPE(value) == (PyTypeObject *)e->cls) *hash = decimal_text_hash(text, n);
        return value;
    }
    case KIND_SET: {
        if (!PyList_CheckExact(arg) || PyList_GET_SIZE(arg) > e->limit) return NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(arg); i++) {
            if (PyList_CheckExact(PyList_GET_ITEM(arg, i))) return NULL; /* a tuple the stock writer stored */
        }
        return e->cls == (PyObject *)&PySet_Type ? PySet_New(arg) : PyFrozenSet_New(arg);
    }
    case KIND_ZONE: {
        /* Only a zone the Python rebuilder loaded before (its dict, e->param[1]): ZoneInfo
         * searches the disk for a key it holds no zone of, which the rebuilder charges. */
        if (!PyUnicode_CheckExact(arg) || PyUnicode_GET_LENGTH(arg) > e->limit) return NULL;
        PyObject *zone = PyDict_GetItemWithError(PyTuple_GET_ITEM(e->param, 1), arg);
        return zone == NULL ? NULL : Py_NewRef(zone);
    }
    case KIND_DEQUE: {
        if (!PyList_CheckExact(arg)) return NULL;
        if (e->code == 0) return PyObject_CallOneArg(e->cls, arg); /* deque(items) */
        if (PyList_GET_SIZE(arg) != 2) return NULL;
        PyObject *args[2] = {PyList_GET_ITEM(arg, 0), PyList_GET_ITEM(arg, 1)}; /* deque(items, maxlen) */
        if (!PyList_CheckExact(args[0]) || (args[1] != Py_None && !exact_int(args[1]))) return NULL;
        return PyObject_Vectorcall(e->cls, args, 2, NULL);
    }
    case KIND_PATH: {
        if (!PyList_CheckExact(arg)) return NULL;
        Py_ssize_t n = PyList_GET_SIZE(arg);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!PyUnicode_CheckExact(PyList_GET_ITEM(arg, i))) return NULL;
        }
#if PARSED_PATHS
        if (!PyBool_Check(e->param)) { /* cls._from_parsed_parts of a POSIX class (register) */
            PyObject *value = posix_parsed_path(e->param, arg);
            if (value != NULL || PyErr_Occurred()) return value;
        }
#endif
#if PY_VERSION_HEX < 0x030C0000
        if (e->param != Py_False && n > 1) { /* a POSIX class */
            PyObject *joined = posix_path_text(arg);
            if (joined != NULL) {
                PyObject *value = PyObject_CallOneArg(e->cls, joined);
                Py_DECREF(joined);
                return value;
            }
            if (PyErr_Occurred()) return NULL;
        }
#endif
        /* the list (held by build_entry alone) cannot change during the call: no code sees it */
        return PyObject_Vectorcall(e->cls, PySequence_Fast_ITEMS(arg), (size_t)n, NULL);
    }
    case KIND_MESSAGE: {
        int shape = message_shape(arg, e->param, PyBytes_AS_STRING(e->checks));
        if (shape <= 0) return NULL; /* not the validated shape: its Python rebuilder validates */
        return install_message(e, arg);
    }
    case KIND_UUID: {
        if (!PyUnicode_CheckExact(arg) || PyUnicode_GET_LENGTH(arg) != 32 || !PyUnicode_IS_ASCII(arg)) return NULL;
        const unsigned char *text = (const unsigned char *)PyUnicode_DATA(arg);
        unsigned char bytes[16];
        for (int i = 0; i < 16; i++) {
            int high = hex_values[text[2 * i]], low = hex_values[text[2 * i + 1]];
            if ((high | low) < 0) return NULL; /* not 32 hex digits: uuid.UUID decides */
            bytes[i] = (unsigned char)(high << 4 | low);
        }
        /* int(text, 16): the same number, read without a str-to-int conversion */
        PyObject *number = _PyLong_FromByteArray(bytes, 16, 0, 0);
        if (number == NULL) return NULL;
        PyObject *value = PyBaseObject_Type.tp_new((PyTypeObject *)e->cls, empty_tuple, NULL);
        if (value == NULL || set_attr(value, str_int, number) < 0) {
            Py_DECREF(number);
            Py_XDECREF(value);
            return NULL;
        }
        Py_hash_t number_hash = PyObject_Hash(number); /* UUID.__hash__: hash(self.int); an int's never fails */
        Py_DECREF(number);
        if (set_attr(value, str_is_safe, e->param) < 0) {
            Py_DECREF(value);
            return NULL;
        }
        *hash = number_hash;
        return value;
    }
    }
    return NULL;
}

/* The Python rebuilder of entry e on its envelope: KIND_CALL, or a shape (or failure) the C
 * kind leaves to it. */
static PyObject *call_rebuilder(State *st, Entry *e, PyObject *env) {
    if (mark_meter(st) < 0) return NULL;
    PyObject *value = PyObject_CallOneArg(e->fn, env);
    if (value == NULL && retry_in_python(st->r)) {
        /* What the pure path's hot path does next, with the same envelope (calling the
         * hook instead would run the rebuilder, and charge its work, once more). */
        PyObject *code_obj = PyLong_FromLong(e->code);
        if (code_obj != NULL) {
            value = PyObject_CallFunctionObjArgs(st->r->construct, code_obj, env, NULL);
            Py_DECREF(code_obj);
        }
    }
    return value;
}

/* Decode the envelope items after the head and build the value of entry e (*hash: see build_kind). */
static PyObject *build_entry(State *st, Entry *e, const unsigned char *q, const unsigned char *pend, Py_ssize_t level,
                             Py_hash_t *hash) {
    PyObject *value = NULL;
    if (e->kind != KIND_CALL && e->nitems == 3 && e->method == NULL) {
        /* A C kind reads env[2] alone: the envelope list is made only when the rebuilder runs. */
        PyObject *arg = decode_value(st, &q, pend, level + 1);
        if (arg == NULL) return NULL;
        if (q != pend) {
            Py_DECREF(arg);
            return NULL; /* trailing bytes in the payload: soft */
        }
        value = build_kind(e, arg, hash);
        if (value != NULL || (PyErr_Occurred() && !retry_in_python(st->r))) {
            Py_DECREF(arg);
            return value;
        }
        PyObject *env = PyList_New(3);
        if (env == NULL) {
            Py_DECREF(arg);
            return NULL;
        }
        PyList_SET_ITEM(env, 0, Py_NewRef(e->module));
        PyList_SET_ITEM(env, 1, Py_NewRef(e->name));
        PyList_SET_ITEM(env, 2, arg);
        value = call_rebuilder(st, e, env);
        Py_DECREF(env);
        return value;
    }
    PyObject *env = PyList_New(e->nitems);
    if (env == NULL) return NULL;
    PyList_SET_ITEM(env, 0, Py_NewRef(e->module));
    PyList_SET_ITEM(env, 1, Py_NewRef(e->name));
    for (Py_ssize_t i = 2; i < e->nitems; i++) {
        PyObject *item = decode_value(st, &q, pend, level + 1);
        if (item == NULL) {
            Py_DECREF(env);
            return NULL;
        }
        PyList_SET_ITEM(env, i, item);
    }
    if (q != pend) {
        Py_DECREF(env);
        return NULL; /* trailing bytes in the payload: soft */
    }
    if (e->method != NULL) {
        PyObject *method = PyList_GET_ITEM(env, 3);
        if (!PyUnicode_CheckExact(method) || PyUnicode_Compare(method, e->method) != 0) {
            Py_DECREF(env);
            if (PyErr_Occurred()) return NULL;
            return NULL; /* another method: the hook decides (soft) */
        }
    }
    if (e->kind != KIND_CALL) {
        value = build_kind(e, PyList_GET_ITEM(env, 2), hash);
        if (value == NULL && PyErr_Occurred() && !retry_in_python(st->r)) {
            Py_DECREF(env);
            return NULL;
        }
    }
    if (value == NULL) value = call_rebuilder(st, e, env);
    Py_DECREF(env);
    return value;
}

/* --- numpy arrays in the plain layout ---------------------------------------
 *
 * [dtype spec, [dims...], "C" or "F", bin buffer], as serde_kit.ext.numpy.loads_plain
 * reads it: a dtype Python already made for that spec, no object fields, a non-empty
 * shape of at most max_array_elements elements whose bytes are exactly the buffer's.
 * The array is numpy.empty(shape, dtype, order) with the buffer copied in: writable,
 * owning its memory, as loads_plain's copy.  Anything else is soft (Python reads it and
 * reports what is wrong). */

/* A str at *pp (any str header): its bytes in [*s, *s + *n). */
static int read_str_span(const unsigned char **pp, const unsigned char *end, const unsigned char **s, Py_ssize_t *n) {
    const unsigned char *p = *pp;
    if (p >= end) return 0;
    unsigned char b = *p++;
    if (b >= 0xa0 && b <= 0xbf) *n = b & 0x1f;
    else if (b >= 0xd9 && b <= 0xdb) { if (!read_length(&p, end, 1 << (b - 0xd9), n)) return 0; }
    else return 0;
    if (end - p < *n) return 0;
    *s = p;
    *pp = p + *n;
    return 1;
}

/* The array of an ext 6 payload in the plain layout, or NULL (soft) for anything else.
 * `whole_row`: the payload is a row's only value, read at any size (one copy, as
 * numpy.loads_large reads it); a nested one only below np_max_payload. */
static NOINLINE PyObject *plain_array(Reader *r, const unsigned char *p, Py_ssize_t n, int whole_row) {
    const unsigned char *end = p + n, *spec, *order;
    Py_ssize_t spec_len, order_len, ndims, buf_len;
    Py_ssize_t dims[16];
    int unit_dim = 0;
    if (r->np_empty == NULL || (!whole_row && n >= r->np_max_payload) || n < 1 || *p++ != 0x94) return NULL;
    if (!read_str_span(&p, end, &spec, &spec_len) || p >= end || *p < 0x90 || *p > 0x9f) return NULL;
    ndims = *p++ & 0x0f;
    Py_ssize_t count = 1;
    for (Py_ssize_t i = 0; i < ndims; i++) {
        if (p >= end) return NULL;
        unsigned char b = *p++;
        uint64_t dim;
        if (b <= 0x7f) dim = b;
        else if (b == 0xcc) { if (end - p < 1) return NULL; dim = p[0]; p += 1; }
        else if (b == 0xcd) { if (end - p < 2) return NULL; dim = be16(p); p += 2; }
        else if (b == 0xce) { if (end - p < 4) return NULL; dim = be32(p); p += 4; }
        else return NULL; /* negative, 64-bit or not an int */
        dims[i] = (Py_ssize_t)dim;
        if (dim == 0) return NULL; /* empty: Python's general path */
        unit_dim |= dim == 1;
        if ((uint64_t)count > (uint64_t)r->np_max_elements / dim) return NULL; /* over the limit: Python names it */
        count *= (Py_ssize_t)dim;
    }
    if (!read_str_span(&p, end, &order, &order_len) || order_len != 1 || (order[0] != 'C' && order[0] != 'F')) return NULL;
    /* The pure path copies with order="K", which lays out an "F" array with a dimension of
     * 1 (C and F contiguous at once) by numpy's own axis sort, not as numpy.empty(.., "F")
     * does (strides differ: (1, 3) gives (24, 8) there, (8, 8) here): Python's. */
    if (order[0] == 'F' && unit_dim && ndims > 1) return NULL;
    if (p >= end || *p < 0xc4 || *p > 0xc6) return NULL;
    unsigned char b = *p++;
    if (!read_length(&p, end, 1 << (b - 0xc4), &buf_len) || end - p != buf_len) return NULL;
    const unsigned char *buf = p;

    PyObject *value = NULL, *shape = NULL, *order_obj = NULL, *dtype;
    Py_ssize_t itemsize;
    KnownDtype *known = NULL;
    if (spec_len <= KNOWN_SPEC_MAX) {
        uint64_t h = 1469598103934665603ULL;
        for (Py_ssize_t i = 0; i < spec_len; i++) {
            h ^= spec[i];
            h *= 1099511628211ULL;
        }
        known = &r->np_known[h & (KNOWN_DTYPES - 1)];
    }
    if (known != NULL && known->dtype != NULL && known->spec_len == spec_len && memcmp(known->spec, spec, (size_t)spec_len) == 0) {
        dtype = Py_NewRef(known->dtype);
        itemsize = known->itemsize;
    } else {
        PyObject *spec_str = make_str(spec, spec_len);
        if (spec_str == NULL) return NULL;
        dtype = PyDict_GetItemWithError(r->np_dtypes, spec_str); /* borrowed */
        Py_DECREF(spec_str);
        if (dtype == NULL) return NULL;
        Py_INCREF(dtype);
        PyObject *itemsize_obj = PyObject_GetAttr(dtype, str_itemsize);
        PyObject *hasobject = itemsize_obj == NULL ? NULL : PyObject_GetAttr(dtype, str_hasobject);
        int plain = hasobject == Py_False && PyLong_CheckExact(itemsize_obj);
        itemsize = plain ? PyLong_AsSsize_t(itemsize_obj) : -1;
        Py_XDECREF(itemsize_obj);
        Py_XDECREF(hasobject);
        if (!plain || itemsize <= 0) goto done;
        if (known != NULL) {
            Py_XSETREF(known->dtype, Py_NewRef(dtype));
            known->itemsize = itemsize;
            known->spec_len = spec_len;
            memcpy(known->spec, spec, (size_t)spec_len);
        }
    }
    if (count > PY_SSIZE_T_MAX / itemsize || count * itemsize != buf_len) goto done;
    shape = PyTuple_New(ndims);
    if (shape == NULL) goto done;
    for (Py_ssize_t i = 0; i < ndims; i++) {
        PyObject *dim = PyLong_FromSsize_t(dims[i]);
        if (dim == NULL) goto done;
        PyTuple_SET_ITEM(shape, i, dim);
    }
    PyObject *args[3] = {shape, dtype, NULL};
    if (order[0] == 'F') { /* "C" is numpy.empty's default: one argument less to parse */
        order_obj = PyUnicode_FromStringAndSize((const char *)order, 1);
        if (order_obj == NULL) goto done;
        args[2] = order_obj;
    }
    value = PyObject_Vectorcall(r->np_empty, args, order_obj == NULL ? 2 : 3, NULL);
    if (value != NULL) {
        /* numpy.empty may make another dtype than the one asked for: a non-native byte
         * order of a unitless datetime64/timedelta64 ('>m8') becomes native, a subarray
         * dtype ('(2,)<i4') becomes more dimensions; the buffer's bytes would then be read
         * as something else. Such arrays are Python's (soft), as is any dtype that fails. */
        PyObject *made = PyObject_GetAttr(value, str_dtype);
        int same = made == NULL ? -1 : made == dtype ? 1 : PyObject_RichCompareBool(made, dtype, Py_EQ);
        Py_XDECREF(made);
        if (same != 1) Py_CLEAR(value);
    }
    if (value != NULL) {
        Py_buffer view;
        if (PyObject_GetBuffer(value, &view, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS) < 0) {
            Py_CLEAR(value);
        } else {
            if (view.len == buf_len) memcpy(view.buf, buf, (size_t)buf_len);
            else Py_CLEAR(value); /* not the array asked for: soft */
            PyBuffer_Release(&view);
        }
    }
done:
    if (value == NULL && PyErr_Occurred()) {
        /* whatever failed, Python's reader tries it and reports it (MemoryError included) */
        if (PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();
    }
    Py_XDECREF(shape);
    Py_XDECREF(order_obj);
    Py_DECREF(dtype);
    return value;
}

/* Probes allowed per hashed value (and a few more): hashes are the stored data's to choose,
 * so a table whose probes run past this is given up for the prescan. */
#define PROBES_PER_VALUE 8

static inline size_t mix_hash(Py_hash_t h) { /* splitmix64's finaliser: spreads honest hashes */
    uint64_t x = (uint64_t)h;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(x ^ (x >> 31));
}

/* Count `hash` in the row's groups: 1 when its group now holds more than max_typed values
 * (or the table gave up: too many probes, no memory), else 0. */
static int count_hash(State *st, Py_hash_t hash) {
    if (st->groups_used * 2 >= st->groups_size) {
        Py_ssize_t size = st->groups_size ? st->groups_size * 2 : 64;
        HashGroup *groups = PyMem_Calloc((size_t)size, sizeof(HashGroup));
        if (groups == NULL) return 1;
        for (Py_ssize_t i = 0; i < st->groups_size; i++) {
            if (st->groups[i].count == 0) continue;
            size_t at = mix_hash(st->groups[i].hash) & (size_t)(size - 1);
            while (groups[at].count != 0) at = (at + 1) & (size_t)(size - 1);
            groups[at] = st->groups[i];
        }
        PyMem_Free(st->groups);
        st->groups = groups;
        st->groups_size = size;
    }
    size_t mask = (size_t)(st->groups_size - 1), at = mix_hash(hash) & mask;
    while (st->groups[at].count != 0 && st->groups[at].hash != hash) {
        at = (at + 1) & mask;
        if (++st->probes > PROBES_PER_VALUE * (st->groups_used + 8)) return 1;
    }
    if (st->groups[at].count == 0) {
        st->groups[at].hash = hash;
        st->groups_used++;
    }
    return ++st->groups[at].count > st->r->max_typed;
}

/* Whether hashing v runs no Python code: a value of a C-level type that holds no other
 * values (datetime, Decimal, str, int ...), a frozenset (its hash reads its items' stored
 * hashes), or an exact tuple of such values. */
static int c_hashable(PyObject *v, int depth) {
    if (Py_TYPE(v)->tp_flags & Py_TPFLAGS_HEAPTYPE) return 0;
    if (PyFrozenSet_CheckExact(v)) return 1;
    if (PyTuple_CheckExact(v)) {
        if (depth >= 8) return 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++) {
            if (!c_hashable(PyTuple_GET_ITEM(v, i), depth + 1)) return 0;
        }
        return 1;
    }
    return !PyTuple_Check(v) && !PyAnySet_Check(v);
}

/* Whether the pure path's count of the row's typed values (by hash, when its prescan asks
 * for it) could now refuse: more than max_typed of one hash.  A value whose hash runs no
 * Python code (c_hashable, or known: the hash build_kind gave, e.g. of a UUID's int) is
 * counted in its hash group; any other with all of those, as its __hash__ is not to run
 * before the prescan. */
static int may_collide(State *st, PyObject *value, Py_hash_t known) {
    Py_hash_t hash;
    if (known != -1) {
        hash = known;
    } else if (c_hashable(value, 0)) {
        hash = PyObject_Hash(value);
    } else {
        return ++st->typed > st->r->max_typed;
    }
    if (hash == -1 && PyErr_Occurred()) {
        PyErr_Clear(); /* a hash that fails (a signalling NaN): not counted, as the pure path's */
        return 0;
    }
    return count_hash(st, hash);
}

/* Whether values of type t have a hash keyed per process (r->keyed, a frozenset set at init):
 * for the type the entry's C kind builds, the answer taken when it was registered. */
static inline int keyed_type(Reader *r, Entry *e, PyTypeObject *t) {
    if ((PyObject *)t == e->built) return e->built_keyed;
    return PySet_Contains(r->keyed, (PyObject *)t);
}

/* An ext of `code` whose payload is [p, p + n), found in content `level` levels deep. */
static PyObject *decode_ext(State *st, int code, const unsigned char *p, Py_ssize_t n, Py_ssize_t level) {
    Reader *r = st->r;
    if (code == NUMPY_ARRAY && level < r->max_ext_depth) {
        PyObject *array = plain_array(r, p, n, 0);
        if (array != NULL && st->lazy && (st->containers += 2) > r->max_containers && ensure_prescan(st) < 0) {
            Py_CLEAR(array); /* its two arrays (the layout, the shape) count, as the prescan's walk counts them */
        }
        if (array != NULL || PyErr_Occurred()) return array; /* unhashable: never tracked */
    }
    if (code < 0 || code > 5 || level >= r->max_ext_depth) return call_hook(st, code, p, n, level, NULL);
    const unsigned char *q = p, *pend = p + n;
    Py_ssize_t nitems, len;
    /* the head: an array header, then module and name as str */
    if (q >= pend) return call_hook(st, code, p, n, level, NULL);
    unsigned char b = *q++;
    if (b >= 0x90 && b <= 0x9f) nitems = b & 0x0f;
    else if (b == 0xdc) { if (!read_length(&q, pend, 2, &nitems)) return call_hook(st, code, p, n, level, NULL); }
    else if (b == 0xdd) { if (!read_length(&q, pend, 4, &nitems)) return call_hook(st, code, p, n, level, NULL); }
    else return call_hook(st, code, p, n, level, NULL);
    if (nitems < 3) return call_hook(st, code, p, n, level, NULL);
    for (int part = 0; part < 2; part++) {
        if (q >= pend) return call_hook(st, code, p, n, level, NULL);
        b = *q++;
        if (b >= 0xa0 && b <= 0xbf) len = b & 0x1f;
        else if (b == 0xd9) { if (!read_length(&q, pend, 1, &len)) return call_hook(st, code, p, n, level, NULL); }
        else if (b == 0xda) { if (!read_length(&q, pend, 2, &len)) return call_hook(st, code, p, n, level, NULL); }
        else if (b == 0xdb) { if (!read_length(&q, pend, 4, &len)) return call_hook(st, code, p, n, level, NULL); }
        else return call_hook(st, code, p, n, level, NULL);
        if (pend - q < len) return call_hook(st, code, p, n, level, NULL);
        q += len;
    }
    uint64_t h = head_hash(code, p, q - p);
    Entry *e = table_find(r, code, p, q - p, h);
    if (e == NULL) return call_hook(st, code, p, n, level, q);
    if (e->nitems != nitems) return call_hook(st, code, p, n, level, NULL);
    if (st->lazy && ++st->containers > r->max_containers && ensure_prescan(st) < 0) return NULL; /* the envelope */
    if (enter_ext() < 0) return NULL;
    Py_hash_t known = -1;
    PyObject *value = build_entry(st, e, q, pend, level, &known);
    leave_ext();
    if (value == NULL && !PyErr_Occurred()) return call_hook(st, code, p, n, level, NULL);
    if (value != NULL && r->track != Py_None && Py_TYPE(value)->tp_hash != PyObject_HashNotImplemented) {
        /* as the pure path's tracked hook: every hashable typed value of a row that may flood */
        int keyed = keyed_type(r, e, Py_TYPE(value));
        PyObject *done = keyed ? NULL : PyObject_CallOneArg(r->track, value);
        if (keyed < 0 || (keyed == 0 && done == NULL)) Py_CLEAR(value);
        Py_XDECREF(done);
    } else if (value != NULL && st->lazy && !st->checked && Py_TYPE(value)->tp_hash != PyObject_HashNotImplemented) {
        /* The pure path counts these (when its prescan says so) and refuses more than
         * max_hash_collisions of one hash: once that many may share one, ask the prescan. */
        int keyed = keyed_type(r, e, Py_TYPE(value));
        if (keyed < 0 || (keyed == 0 && may_collide(st, value, known) && ensure_prescan(st) < 0)) Py_CLEAR(value);
    }
    return value;
}

/* --- values ---------------------------------------------------------------- */

static PyObject *decode_array(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t n,
                              Py_ssize_t level) {
    if (end - *pp < n) return NULL; /* each item takes a byte at least */
    if (st->lazy && ++st->containers > st->r->max_containers && ensure_prescan(st) < 0) return NULL;
    if (Py_EnterRecursiveCall(" while decoding a stored value")) return NULL;
    PyObject *list = PyList_New(n);
    if (list != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = decode_value(st, pp, end, level);
            if (item == NULL) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, item);
        }
    }
    Py_LeaveRecursiveCall();
    return list;
}

/* A map key: a string, number, nil, bool or bin.  Arrays (tuples in the pure path, with
 * their hash-flood tracking), maps and exts are soft: Python decides. */
static PyObject *decode_key(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t level) {
    if (*pp >= end) return NULL;
    unsigned char b = **pp;
    if ((b >= 0x80 && b <= 0x9f) || b == 0xdc || b == 0xdd || b == 0xde || b == 0xdf || (b >= 0xd4 && b <= 0xd8) ||
        b == 0xc7 || b == 0xc8 || b == 0xc9) {
        return NULL;
    }
    if (b >= 0xa0 && b <= 0xbf) {
        Py_ssize_t n = b & 0x1f;
        const unsigned char *p = *pp + 1;
        if (end - p < n) return NULL;
        *pp = p + n;
        return make_key(p, n);
    }
    return decode_value(st, pp, end, level);
}

static PyObject *decode_map(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t n,
                            Py_ssize_t level) {
    if ((end - *pp) / 2 < n) return NULL; /* each entry takes two bytes at least */
    if (st->lazy && ++st->containers > st->r->max_containers && ensure_prescan(st) < 0) return NULL;
    /* Float keys' hashes can be aimed (see the top of this file): in a map of as many entries
     * as the prescan checks (fewer under a lowered max_hash_collisions), the first float key
     * runs the row's prescan before the key goes in, as the pure path runs it first. */
    Py_ssize_t checked = st->r->max_typed < CHECKED_ENTRIES ? st->r->max_typed + 1 : CHECKED_ENTRIES;
    int floats_unchecked = st->lazy && !st->checked && n >= checked;
    if (Py_EnterRecursiveCall(" while decoding a stored value")) return NULL;
    PyObject *dict = PyDict_New();
    if (dict != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (floats_unchecked && *pp < end && (**pp == 0xca || **pp == 0xcb)) {
                floats_unchecked = 0;
                if (ensure_prescan(st) < 0) {
                    Py_CLEAR(dict);
                    break;
                }
            }
            PyObject *key = decode_key(st, pp, end, level);
            if (key == NULL) {
                Py_CLEAR(dict);
                break;
            }
            PyObject *value = decode_value(st, pp, end, level);
            if (value == NULL) {
                Py_DECREF(key);
                Py_CLEAR(dict);
                break;
            }
            int failed = PyDict_SetItem(dict, key, value);
            Py_DECREF(key);
            Py_DECREF(value);
            if (failed) {
                Py_CLEAR(dict);
                break;
            }
        }
    }
    Py_LeaveRecursiveCall();
    return dict;
}

static PyObject *decode_value(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t level) {
    const unsigned char *p = *pp;
    Py_ssize_t n;
    if (p >= end) return NULL;
    unsigned char b = *p++;
    *pp = p;
    if (b <= 0x7f) return PyLong_FromLong(b);
    if (b >= 0xe0) return PyLong_FromLong((signed char)b);
    if (b <= 0x8f) return decode_map(st, pp, end, b & 0x0f, level);
    if (b <= 0x9f) return decode_array(st, pp, end, b & 0x0f, level);
    if (b <= 0xbf) {
        n = b & 0x1f;
        goto str;
    }
    switch (b) {
    case 0xc0: Py_RETURN_NONE;
    case 0xc2: Py_RETURN_FALSE;
    case 0xc3: Py_RETURN_TRUE;
    case 0xc4: case 0xc5: case 0xc6:
        if (!read_length(pp, end, 1 << (b - 0xc4), &n) || end - *pp < n) return NULL;
        p = *pp;
        *pp = p + n;
        return PyBytes_FromStringAndSize((const char *)p, n);
    case 0xca: {
        if (end - p < 4) return NULL;
        uint32_t bits = be32(p);
        float f;
        memcpy(&f, &bits, 4);
        *pp = p + 4;
        return PyFloat_FromDouble((double)f);
    }
    case 0xcb: {
        if (end - p < 8) return NULL;
        uint64_t bits = be64(p);
        double d;
        memcpy(&d, &bits, 8);
        *pp = p + 8;
        return PyFloat_FromDouble(d);
    }
    case 0xcc: if (end - p < 1) return NULL; *pp = p + 1; return PyLong_FromLong(p[0]);
    case 0xcd: if (end - p < 2) return NULL; *pp = p + 2; return PyLong_FromLong(be16(p));
    case 0xce: if (end - p < 4) return NULL; *pp = p + 4; return PyLong_FromUnsignedLong(be32(p));
    case 0xcf: if (end - p < 8) return NULL; *pp = p + 8; return PyLong_FromUnsignedLongLong(be64(p));
    case 0xd0: if (end - p < 1) return NULL; *pp = p + 1; return PyLong_FromLong((int8_t)p[0]);
    case 0xd1: if (end - p < 2) return NULL; *pp = p + 2; return PyLong_FromLong((int16_t)be16(p));
    case 0xd2: if (end - p < 4) return NULL; *pp = p + 4; return PyLong_FromLong((long)(int32_t)be32(p));
    case 0xd3: if (end - p < 8) return NULL; *pp = p + 8; return PyLong_FromLongLong((long long)(int64_t)be64(p));
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        n = (Py_ssize_t)1 << (b - 0xd4);
        goto ext;
    case 0xc7: case 0xc8: case 0xc9:
        if (!read_length(pp, end, 1 << (b - 0xc7), &n)) return NULL;
        p = *pp;
        goto ext;
    case 0xd9: case 0xda: case 0xdb:
        if (!read_length(pp, end, 1 << (b - 0xd9), &n)) return NULL;
        p = *pp;
        goto str;
    case 0xdc: case 0xdd:
        if (!read_length(pp, end, b == 0xdc ? 2 : 4, &n)) return NULL;
        return decode_array(st, pp, end, n, level);
    case 0xde: case 0xdf:
        if (!read_length(pp, end, b == 0xde ? 2 : 4, &n)) return NULL;
        return decode_map(st, pp, end, n, level);
    default: /* 0xc1 */
        return NULL;
    }
str:
    if (end - p < n) return NULL;
    *pp = p + n;
    return make_str(p, n);
ext:
    if (end - p < 1 || end - p - 1 < n) return NULL;
    {
        int code = (signed char)p[0];
        if (code == -1) return NULL; /* a timestamp: the pure path's engine decides */
        *pp = p + 1 + n;
        return decode_ext(st, code, p + 1, n, level);
    }
}

/* --- the type -------------------------------------------------------------- */

/* The row again, by the Python side, after this reader ended its attempt: with hash
 * tracking (Retrack), from the meter's mark (Python was called), or as it is. */
static PyObject *hand_back(Reader *self, State *st, PyObject *data) {
    PyObject *value;
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(Retrack)) return NULL; /* the prescan refused the row */
        PyErr_Clear();
        return PyObject_CallMethodOneArg(self->fallback, str_tracked, data);
    }
    if (st->mark == NULL) return PyObject_CallMethodOneArg(self->fallback, str_decode, data);
    /* Python was called (and may have charged the meter): the fallback rewinds first. */
    value = PyObject_CallMethodObjArgs(self->fallback, str_redo, data, st->mark, NULL);
    Py_CLEAR(st->mark);
    return value;
}

static PyObject *read_row(Reader *self, PyObject *data, int lazy) {
    if (self->hooks == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is not initialised");
        return NULL;
    }
    State st = {self, data, NULL, NULL, NULL, lazy, 0, 0, 0, NULL, 0, 0, 0};
    if (Py_GetRecursionLimit() > self->safe_recursion_limit) {
        ensure_prescan(&st);
        return hand_back(self, &st, data);
    }
    Py_buffer buffer;
    int exact = PyBytes_CheckExact(data); /* bytes are immutable: read in place, no buffer to hold */
    if (exact) {
        buffer.buf = PyBytes_AS_STRING(data);
        buffer.len = PyBytes_GET_SIZE(data);
    } else if (PyObject_GetBuffer(data, &buffer, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    st.base = (const unsigned char *)buffer.buf;
    const unsigned char *p = st.base, *end = st.base + buffer.len;
    PyObject *value = decode_value(&st, &p, end, 0);
    PyMem_Free(st.groups);
    st.groups = NULL;
    if (value != NULL && p != end) Py_CLEAR(value); /* trailing bytes: soft */
    Py_XDECREF(st.view);
    if (!exact) PyBuffer_Release(&buffer);
    if (value != NULL) {
        Py_XDECREF(st.mark);
        return value;
    }
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_RecursionError) && !PyErr_ExceptionMatches(Retrack)) {
        /* A real error.  The pure path would have run the prescan first: its error wins. */
        if (st.lazy && !st.checked) {
            PyObject *type, *exc, *tb;
            PyErr_Fetch(&type, &exc, &tb);
            if (ensure_prescan(&st) < 0) {
                Py_XDECREF(type);
                Py_XDECREF(exc);
                Py_XDECREF(tb);
                value = hand_back(self, &st, data);
                Py_XDECREF(st.mark);
                return value;
            }
            PyErr_Restore(type, exc, tb);
        }
        Py_XDECREF(st.mark);
        return NULL;
    }
    if (!PyErr_ExceptionMatches(Retrack)) {
        /* soft, or a RecursionError: the whole row goes to the Python side */
        PyErr_Clear();
        ensure_prescan(&st);
    }
    value = hand_back(self, &st, data);
    Py_XDECREF(st.mark);
    return value;
}

static PyObject *Reader_decode(Reader *self, PyObject *data) { return read_row(self, data, 0); }

/* A row the pure path prescans before it decodes: the prescan runs only when this row
 * needs it (see ensure_prescan), with the same outcome as running it first. */
static PyObject *Reader_decode_checked(Reader *self, PyObject *data) { return read_row(self, data, 1); }

static PyObject *Reader_set_row_limits(Reader *self, PyObject *args) {
    Py_ssize_t max_containers, max_typed;
    if (!PyArg_ParseTuple(args, "nn:set_row_limits", &max_containers, &max_typed)) return NULL;
    if (max_containers < 0 || max_typed < 0) {
        PyErr_SetString(PyExc_ValueError, "row limits must be non-negative");
        return NULL;
    }
    self->max_containers = max_containers;
    self->max_typed = max_typed;
    Py_RETURN_NONE;
}

static int str_tuple(PyObject *o) {
    if (!PyTuple_CheckExact(o)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(o, i))) return 0;
    }
    return 1;
}

/* (names, checks, expected_type, allows_extra, ai): names str, checks ints in range (one
 * per name), expected_type str, allows_extra bool, ai None or (call, invalid, counts,
 * details, declared): four tuples of str and one tuple of str tuples, one per detail. */
static int message_param_fits(PyObject *param) {
    if (!PyTuple_CheckExact(param) || PyTuple_GET_SIZE(param) != 5) return 0;
    PyObject *names = PyTuple_GET_ITEM(param, 0), *checks = PyTuple_GET_ITEM(param, 1);
    PyObject *extra = PyTuple_GET_ITEM(param, 3), *ai = PyTuple_GET_ITEM(param, 4);
    if (!str_tuple(names) || !PyTuple_CheckExact(checks) || PyTuple_GET_SIZE(checks) != PyTuple_GET_SIZE(names) ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(param, 2)) || !PyBool_Check(extra)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(checks); i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i);
        if (!PyLong_CheckExact(check)) return 0;
        long code = PyLong_AsLong(check);
        if (code < 0 || code > CHECK_LAST) {
            PyErr_Clear();
            return 0;
        }
    }
    if (ai == Py_None) return 1;
    if (!PyTuple_CheckExact(ai) || PyTuple_GET_SIZE(ai) != 5) return 0;
    for (int i = 0; i < 4; i++) {
        if (!str_tuple(PyTuple_GET_ITEM(ai, i))) return 0;
    }
    PyObject *declared = PyTuple_GET_ITEM(ai, 4);
    if (!PyTuple_CheckExact(declared) || PyTuple_GET_SIZE(declared) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(ai, 3))) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(declared); i++) {
        if (!str_tuple(PyTuple_GET_ITEM(declared, i))) return 0;
    }
    return 1;
}

/* The key names a message entry checks (its fields, tool calls' and usage's keys):
 * into the key cache, so that the checks match them by pointer. */
static int seed_message_keys(PyObject *param) {
    if (seed_keys(PyTuple_GET_ITEM(param, 0)) < 0) return -1;
    PyObject *ai = PyTuple_GET_ITEM(param, 4);
    if (ai == Py_None) return 0;
    for (int i = 0; i < 4; i++) {
        if (seed_keys(PyTuple_GET_ITEM(ai, i)) < 0) return -1;
    }
    PyObject *declared = PyTuple_GET_ITEM(ai, 4);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(declared); i++) {
        if (seed_keys(PyTuple_GET_ITEM(declared, i)) < 0) return -1;
    }
    return 0;
}

/* array(data): the array of a row that is one plain-layout ext 6 and nothing else, or None. */
static PyObject *Reader_array(Reader *self, PyObject *data) {
    if (self->np_empty == NULL) {
        if (self->learn != Py_None) { /* Python may enable arrays now */
            PyObject *code = PyLong_FromLong(NUMPY_ARRAY), *empty = PyBytes_FromStringAndSize(NULL, 0);
            PyObject *done = NULL;
            if (code != NULL && empty != NULL) {
                PyObject *args[3] = {code, empty, Py_None};
                done = PyObject_Vectorcall(self->learn, args, 3, NULL);
            }
            Py_XDECREF(code);
            Py_XDECREF(empty);
            if (done == NULL) return NULL;
            Py_DECREF(done);
        }
        if (self->np_empty == NULL) Py_RETURN_NONE;
    }
    Py_buffer buffer;
    if (PyObject_GetBuffer(data, &buffer, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)buffer.buf, *end = p + buffer.len;
    PyObject *value = NULL;
    Py_ssize_t n = -1;
    if (p < end) {
        unsigned char b = *p++;
        if (b >= 0xd4 && b <= 0xd8) n = (Py_ssize_t)1 << (b - 0xd4);
        else if (b >= 0xc7 && b <= 0xc9 && !read_length(&p, end, 1 << (b - 0xc7), &n)) n = -1;
    }
    if (n >= 0 && end - p >= 1 && p[0] == NUMPY_ARRAY && end - p - 1 == n) value = plain_array(self, p + 1, n, 1);
    PyBuffer_Release(&buffer);
    if (value != NULL || PyErr_Occurred()) return value;
    Py_RETURN_NONE;
}

static PyObject *Reader_set_numpy(Reader *self, PyObject *args) {
    PyObject *empty, *dtypes;
    Py_ssize_t max_elements, max_payload;
    if (!PyArg_ParseTuple(args, "OO!nn:set_numpy", &empty, &PyDict_Type, &dtypes, &max_elements, &max_payload)) return NULL;
    if (!PyCallable_Check(empty) || max_elements < 0 || max_payload < 0) {
        PyErr_SetString(PyExc_ValueError, "set_numpy(empty, dtypes, max_elements, max_payload): callable, dict, two ints >= 0");
        return NULL;
    }
    Py_XSETREF(self->np_empty, Py_NewRef(empty));
    Py_XSETREF(self->np_dtypes, Py_NewRef(dtypes));
    for (size_t i = 0; i < KNOWN_DTYPES; i++) Py_CLEAR(self->np_known[i].dtype); /* they were another dict's */
    self->np_max_elements = max_elements;
    self->np_max_payload = max_payload;
    Py_RETURN_NONE;
}

/* Whether decimal_text_hash gives the hash of what cls builds from a few texts (its numeric
 * hash); 0 (computed no more) when not, or when cls fails on one. */
static int text_hash_fits(PyObject *cls) {
    static const char *samples[] = {
        "0", "-0", "-1", "1.00", "12.5", "-0.001", "+7.", ".25", "2305843009213693958", "-2305843009213693951.0",
        "9999999999999999999999999999999999999999999999999999999999999.99"};
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        Py_ssize_t n = (Py_ssize_t)strlen(samples[i]);
        PyObject *value = PyObject_CallFunction(cls, "s#", samples[i], n);
        Py_hash_t hash = value == NULL ? -1 : PyObject_Hash(value);
        Py_XDECREF(value);
        if (hash == -1) {
            PyErr_Clear();
            return 0;
        }
        if (decimal_text_hash(samples[i], n) != hash) return 0;
    }
    return 1;
}

static PyObject *Reader_register(Reader *self, PyObject *args) {
    int code, kind;
    PyObject *head, *method, *module, *name, *fn, *cls, *param;
    Py_ssize_t nitems;
    if (!PyArg_ParseTuple(args, "iO!nOUUiOOO:register", &code, &PyBytes_Type, &head, &nitems, &method, &module, &name,
                          &kind, &fn, &cls, &param)) {
        return NULL;
    }
    if (self->hooks == NULL || self->keyed == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is not initialised");
        return NULL;
    }
    if (code < 0 || code > 5 || kind < 0 || kind > KIND_LAST || nitems < 3 || (method != Py_None && !PyUnicode_CheckExact(method))) {
        PyErr_SetString(PyExc_ValueError, "not an entry this reader can hold");
        return NULL;
    }
    if ((kind != KIND_CALL && nitems > 4) || ((kind == KIND_DATETIME || kind == KIND_DATACLASS) && !PyTuple_CheckExact(param)) ||
        (kind == KIND_ENUM && !PyDict_CheckExact(param)) || (kind != KIND_CALL && kind != KIND_TUPLE && !PyType_Check(cls)) ||
        !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_ValueError, "entry parameters do not fit its kind");
        return NULL;
    }
    if ((kind == KIND_MESSAGE || kind == KIND_DATACLASS) && ((PyTypeObject *)cls)->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_SetString(PyExc_ValueError, "entry class is not made by object.__new__");
        return NULL;
    }
    Py_ssize_t limit = 0;
    if (kind == KIND_ISO || kind == KIND_DECIMAL || kind == KIND_SET || kind == KIND_ZONE) {
        PyObject *found = param;
        if (kind == KIND_ISO) {
            if (!PyTuple_CheckExact(param) || PyTuple_GET_SIZE(param) != 3 || !PyCallable_Check(PyTuple_GET_ITEM(param, 1)) ||
                !PyBool_Check(PyTuple_GET_ITEM(param, 2))) {
                PyErr_SetString(PyExc_ValueError, "an ISO entry's parameters are (limit, fromisoformat, is_date)");
                return NULL;
            }
            found = PyTuple_GET_ITEM(param, 0);
        }
        if (kind == KIND_ZONE) {
            if (!PyTuple_CheckExact(param) || PyTuple_GET_SIZE(param) != 2 || !PyDict_CheckExact(PyTuple_GET_ITEM(param, 1))) {
                PyErr_SetString(PyExc_ValueError, "a zone entry's parameters are (limit, the dict of loaded zones)");
                return NULL;
            }
            found = PyTuple_GET_ITEM(param, 0);
        }
        if (kind == KIND_SET && cls != (PyObject *)&PySet_Type && cls != (PyObject *)&PyFrozenSet_Type) {
            PyErr_SetString(PyExc_ValueError, "a set entry builds set or frozenset");
            return NULL;
        }
        int overflow = 0;
        long long value = PyLong_CheckExact(found) ? PyLong_AsLongLongAndOverflow(found, &overflow) : -1;
        if (value == -1 && PyErr_Occurred()) return NULL;
        if (overflow < 0 || (overflow == 0 && value < 0)) {
            PyErr_SetString(PyExc_ValueError, "an entry's limit is an int of at least 0");
            return NULL;
        }
        limit = overflow > 0 || value > (long long)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)value;
    }
    if (kind == KIND_MESSAGE && !message_param_fits(param)) {
        PyErr_SetString(PyExc_ValueError, "message entry parameters do not fit (see serde_kit.native)");
        return NULL;
    }
    if (kind == KIND_DATACLASS && !str_tuple(param)) {
        PyErr_SetString(PyExc_ValueError, "a dataclass entry's parameter is its field names, a tuple of str");
        return NULL;
    }
    if (kind == KIND_PATH && code != 1) {
        PyErr_SetString(PyExc_ValueError, "a path entry is read from ext 1 (positional arguments)");
        return NULL;
    }
    if (kind == KIND_PATH && !PyBool_Check(param) && !(PARSED_PATHS && PyCallable_Check(param))) {
        PyErr_SetString(PyExc_ValueError, "a path entry's parameter is a bool or (3.11) the class's _from_parsed_parts");
        return NULL;
    }
    if (kind == KIND_DEQUE && code != 0 && code != 1) {
        PyErr_SetString(PyExc_ValueError, "a deque entry is read from ext 0 or 1");
        return NULL;
    }
    if (self->nentries >= MAX_ENTRIES) Py_RETURN_FALSE;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(head);
    Py_ssize_t n = PyBytes_GET_SIZE(head);
    uint64_t h = head_hash(code, p, n);
    if (table_find(self, code, p, n, h) != NULL) Py_RETURN_FALSE;
    PyObject *names = NULL, *checks = NULL;
    if (kind == KIND_MESSAGE) {
        PyObject *codes = PyTuple_GET_ITEM(param, 1);
        names = PyFrozenSet_New(PyTuple_GET_ITEM(param, 0));
        checks = PyBytes_FromStringAndSize(NULL, PyTuple_GET_SIZE(codes));
        if (names == NULL || checks == NULL || seed_message_keys(param) < 0) {
            Py_XDECREF(names);
            Py_XDECREF(checks);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(codes); i++) { /* each in range: message_param_fits */
            PyBytes_AS_STRING(checks)[i] = (char)PyLong_AsLong(PyTuple_GET_ITEM(codes, i));
        }
    } else if (kind == KIND_DATACLASS && seed_keys(param) < 0) {
        return NULL;
    }
    int text_hash = kind == KIND_DECIMAL && text_hash_fits(cls); /* calls cls: before a slot is taken */
    PyObject *built = kind == KIND_TUPLE ? (PyObject *)&PyTuple_Type : kind == KIND_CALL ? NULL : cls;
    int built_keyed = built == NULL ? 0 : PySet_Contains(self->keyed, built);
    if (built_keyed < 0) return NULL;
    size_t slot = (size_t)h & (TABLE_SLOTS - 1);
    while (self->table[slot].head != NULL) slot = (slot + 1) & (TABLE_SLOTS - 1);
    Entry *e = &self->table[slot];
    e->hash = h;
    e->code = code;
    e->kind = kind;
    e->nitems = nitems;
    e->method = method == Py_None ? NULL : Py_NewRef(method);
    e->module = Py_NewRef(module);
    e->name = Py_NewRef(name);
    e->fn = Py_NewRef(fn);
    e->cls = Py_NewRef(cls);
    e->param = Py_NewRef(param);
    e->limit = limit;
    e->text_hash = text_hash;
    e->built = built;
    e->built_keyed = built_keyed;
    e->names = names;
    e->checks = checks;
    e->head = Py_NewRef(head); /* last: the slot is taken once head is set */
    self->nentries++;
    Py_RETURN_TRUE;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fallback", "hooks", "learn", "construct", "serde_error", "safe_recursion_limit", "track", "keyed", NULL};
    PyObject *fallback, *hooks, *learn, *construct, *serde_error, *track = Py_None, *keyed = NULL;
    int safe;
    if (self->hooks != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Reader is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOOi|OO!:Reader", kwlist, &fallback, &PyTuple_Type, &hooks, &learn,
                                     &construct, &serde_error, &safe, &track, &PyFrozenSet_Type, &keyed)) {
        return -1;
    }
    if (PyTuple_GET_SIZE(hooks) < 1 || !PyExceptionClass_Check(serde_error) || !PyCallable_Check(construct) ||
        (track != Py_None && (!PyCallable_Check(track) || keyed == NULL))) {
        PyErr_SetString(PyExc_ValueError, "hooks must hold one hook per level; serde_error an exception class");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(hooks); i++) {
        if (!PyCallable_Check(PyTuple_GET_ITEM(hooks, i))) {
            PyErr_SetString(PyExc_TypeError, "every hook must be callable");
            return -1;
        }
    }
    self->fallback = Py_NewRef(fallback);
    self->hooks = Py_NewRef(hooks);
    self->learn = Py_NewRef(learn);
    self->construct = Py_NewRef(construct);
    self->track = Py_NewRef(track);
    self->keyed = keyed == NULL ? PyFrozenSet_New(NULL) : Py_NewRef(keyed);
    if (self->keyed == NULL) return -1;
    self->serde_error = Py_NewRef(serde_error);
    self->max_ext_depth = PyTuple_GET_SIZE(hooks) - 1;
    self->safe_recursion_limit = safe;
    return 0;
}

static int Reader_traverse(Reader *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback);
    Py_VISIT(self->hooks);
    Py_VISIT(self->learn);
    Py_VISIT(self->construct);
    Py_VISIT(self->track);
    Py_VISIT(self->keyed);
    Py_VISIT(self->serde_error);
    Py_VISIT(self->np_empty);
    Py_VISIT(self->np_dtypes);
    for (size_t i = 0; i < KNOWN_DTYPES; i++) Py_VISIT(self->np_known[i].dtype);
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        Entry *e = &self->table[i];
        if (e->head == NULL) continue;
        Py_VISIT(e->method);
        Py_VISIT(e->module);
        Py_VISIT(e->name);
        Py_VISIT(e->fn);
        Py_VISIT(e->cls);
        Py_VISIT(e->param);
        Py_VISIT(e->names);
        Py_VISIT(e->checks);
    }
    return 0;
}

static int Reader_clear(Reader *self) {
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->learn);
    Py_CLEAR(self->construct);
    Py_CLEAR(self->track);
    Py_CLEAR(self->keyed);
    Py_CLEAR(self->serde_error);
    Py_CLEAR(self->np_empty);
    Py_CLEAR(self->np_dtypes);
    for (size_t i = 0; i < KNOWN_DTYPES; i++) Py_CLEAR(self->np_known[i].dtype);
    Py_CLEAR(self->hooks);
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        Entry *e = &self->table[i];
        if (e->head == NULL) continue;
        Py_CLEAR(e->method);
        Py_CLEAR(e->module);
        Py_CLEAR(e->name);
        Py_CLEAR(e->fn);
        Py_CLEAR(e->cls);
        Py_CLEAR(e->param);
        Py_CLEAR(e->names);
        Py_CLEAR(e->checks);
        Py_CLEAR(e->head);
    }
    self->nentries = 0;
    return 0;
}

static void Reader_dealloc(Reader *self) {
    PyObject_GC_UnTrack(self);
    Reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Reader_entries(Reader *self, void *closure) { return PyLong_FromSsize_t(self->nentries); }

static PyMethodDef Reader_methods[] = {
    {"decode", (PyCFunction)Reader_decode, METH_O, "decode(data, /): the value one msgpack row holds."},
    {"decode_checked", (PyCFunction)Reader_decode_checked, METH_O,
     "decode_checked(data, /): decode() for a row the pure path prescans first; this reader calls "
     "fallback.check(data) itself, once, when the row needs it."},
    {"set_row_limits", (PyCFunction)Reader_set_row_limits, METH_VARARGS,
     "set_row_limits(max_containers, max_hash_collisions, /): the limits decode_checked counts against."},
    {"array", (PyCFunction)Reader_array, METH_O,
     "array(data, /): the array of a row holding one plain-layout numpy ext and nothing else, else None."},
    {"set_numpy", (PyCFunction)Reader_set_numpy, METH_VARARGS,
     "set_numpy(empty, dtypes, max_elements, max_payload, /): build plain-layout arrays with numpy.empty."},
    {"register", (PyCFunction)Reader_register, METH_VARARGS,
     "register(code, head, nitems, method, module, name, kind, fn, cls, param, /): add an allowed envelope "
     "head; False when the table is full or holds it already."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"entries", (getter)Reader_entries, NULL, "envelope heads registered", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "serde_kit._reader.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Reader(fallback, hooks, learn, construct, serde_error, safe_recursion_limit, track=None, keyed=frozenset()): "
              "a compiled msgpack row reader.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_traverse = (traverseproc)Reader_traverse,
    .tp_clear = (inquiry)Reader_clear,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

/* --- Serializer.loads_typed for ("msgpack", bytes) rows ------------------------
 *
 * LoadsTyped(reader, slow, on_error, tiny_row, small_row[, max_row_bytes[, meter_state]]) is
 * called as the serializer's loads_typed.  It takes what the Python method's small-row path
 * takes: an exact tuple of an exact str equal to "msgpack" and exact bytes, shorter than
 * tiny_row (or than small_row while the recursion limit is the safe one) and holding no
 * 0xff byte; and reads it as reader.decode does.  An error is handed to on_error(exc,
 * payload), which does what the Python method's except clauses do; every other row goes
 * to slow(data), the Python method itself.  So no Python frame runs for a small row read
 * wholly in C.  Of the rows the method checks in full (Decoder.loads_checked), within
 * max_row_bytes (default: below small_row):
 *  - a row of one numpy ext is read as that path reads it first: its plain layout in one
 *    copy, else slow;
 *  - given meter_state (serde_kit.budget's thread-local; the decoder has a checked reader),
 *    at the safe recursion limit and with no work meter open on this thread, any other row
 *    is read as reader.decode_checked, which is what the method runs for it then. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Reader *reader;
    PyObject *slow;
    PyObject *on_error;
    PyObject *meter_state; /* serde_kit.budget's thread-local (its `meter`), or NULL: no checked rows here */
    Py_ssize_t tiny_row;
    Py_ssize_t small_row;
    Py_ssize_t max_row_bytes; /* Limits.max_row_bytes: longer rows are the method's to refuse */
} LoadsTyped;

static PyObject *str_msgpack, *str_meter;

/* serde_kit._stack._C_RECURSION_LIMIT: from Python 3.12 C code recurses to a limit of the
 * interpreter's own; the method's checks take the larger of it and the recursion limit. */
#if PY_VERSION_HEX >= 0x030D0000
#define C_RECURSION_FLOOR 10000
#elif PY_VERSION_HEX >= 0x030C0000
#define C_RECURSION_FLOOR 1500
#else
#define C_RECURSION_FLOOR 0
#endif

/* reader.decode (or decode_checked) of the row, its error handed to on_error(exc, payload). */
static PyObject *LoadsTyped_read(LoadsTyped *self, PyObject *payload, int checked) {
    PyObject *value = read_row(self->reader, payload, checked);
    if (value != NULL) return value;
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (exc == NULL) { /* cannot happen: read_row returns NULL with an error set */
        Py_XDECREF(type);
        Py_XDECREF(tb);
        PyErr_SetString(PyExc_SystemError, "the reader failed without an error");
        return NULL;
    }
    if (tb != NULL) PyException_SetTraceback(exc, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *args[2] = {exc, payload};
    value = PyObject_Vectorcall(self->on_error, args, 2, NULL);
    Py_DECREF(exc);
    return value;
}

/* Whether no work meter is open on this thread (budget.current() is None); -1 on error. */
static int unmetered(PyObject *state) {
    PyObject *meter;
#if PY_VERSION_HEX >= 0x030D0000
    if (PyObject_GetOptionalAttr(state, str_meter, &meter) < 0) return -1;
#else
    if (_PyObject_LookupAttr(state, str_meter, &meter) < 0) return -1;
#endif
    int none = meter == NULL || meter == Py_None;
    Py_XDECREF(meter);
    return none;
}

static PyObject *LoadsTyped_one(LoadsTyped *self, PyObject *data) {
    if (PyTuple_CheckExact(data) && PyTuple_GET_SIZE(data) == 2) {
        PyObject *tag = PyTuple_GET_ITEM(data, 0), *payload = PyTuple_GET_ITEM(data, 1);
        if (PyBytes_CheckExact(payload) && PyUnicode_CheckExact(tag) &&
            (tag == str_msgpack || PyUnicode_Compare(tag, str_msgpack) == 0)) {
            Py_ssize_t n = PyBytes_GET_SIZE(payload);
            /* _stack.recursion_limit() <= SAFE_RECURSION_LIMIT, as the method asks */
            int limit = Py_GetRecursionLimit();
            int safe_stack = (limit > C_RECURSION_FLOOR ? limit : C_RECURSION_FLOOR) <= self->reader->safe_recursion_limit;
            if ((n < self->tiny_row || (n < self->small_row && safe_stack)) &&
                memchr(PyBytes_AS_STRING(payload), 0xff, (size_t)n) == NULL) {
                return LoadsTyped_read(self, payload, 0);
            }
            /* A row of one numpy ext: the method's checked path tries the plain layout first
             * (Decoder.loads_checked: after max_row_bytes). */
            const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(payload);
            Py_ssize_t code_at = n == 0 ? 0 : (b[0] >= 0xd4 && b[0] <= 0xd8) ? 1 : (b[0] >= 0xc7 && b[0] <= 0xc9) ? 2 + (1 << (b[0] - 0xc7)) - 1 : 0;
            if (code_at > 0 && n <= self->max_row_bytes && n > code_at && b[code_at] == NUMPY_ARRAY) {
                PyObject *value = Reader_array(self->reader, payload);
                if (value != Py_None) return value; /* the array, or its error (raised as the method raises it) */
                Py_DECREF(value);
            } else if (self->meter_state != NULL && n <= self->max_row_bytes && safe_stack) {
                /* Any other row within max_row_bytes (a large one, or one holding 0xff) the
                 * method gives the reader's decode_checked when no meter is open on this thread
                 * (Decoder._loads_metered with a meter of its own): read it so here. */
                int none = unmetered(self->meter_state);
                if (none < 0) return NULL;
                if (none) return LoadsTyped_read(self, payload, 1);
            }
        }
    }
    return PyObject_CallOneArg(self->slow, data);
}

static PyObject *LoadsTyped_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        /* the Python method decides (and words the TypeError) */
        return PyObject_Vectorcall(((LoadsTyped *)self)->slow, args, nargsf, kwnames);
    }
    return LoadsTyped_one((LoadsTyped *)self, args[0]);
}

static int LoadsTyped_init(LoadsTyped *self, PyObject *args, PyObject *kwds) {
    PyObject *reader, *slow, *on_error;
    PyObject *meter_state = Py_None;
    Py_ssize_t tiny_row, small_row, max_row_bytes = -1;
    if (self->reader != NULL) {
        PyErr_SetString(PyExc_TypeError, "a LoadsTyped is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!OOnn|nO:LoadsTyped", &ReaderType, &reader, &slow, &on_error, &tiny_row, &small_row,
                          &max_row_bytes, &meter_state)) {
        return -1;
    }
    if (PyTuple_GET_SIZE(args) < 6) max_row_bytes = small_row - 1;
    if (!PyCallable_Check(slow) || !PyCallable_Check(on_error) || tiny_row < 0 || small_row < tiny_row ||
        max_row_bytes < small_row - 1) {
        PyErr_SetString(PyExc_ValueError,
                        "slow and on_error must be callable, 0 <= tiny_row <= small_row <= max_row_bytes + 1");
        return -1;
    }
    if (((Reader *)reader)->hooks == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Reader is not initialised");
        return -1;
    }
    self->reader = (Reader *)Py_NewRef(reader);
    self->slow = Py_NewRef(slow);
    self->on_error = Py_NewRef(on_error);
    self->tiny_row = tiny_row;
    self->small_row = small_row;
    self->max_row_bytes = max_row_bytes;
    self->meter_state = meter_state == Py_None ? NULL : Py_NewRef(meter_state);
    self->vectorcall = LoadsTyped_vectorcall;
    return 0;
}

static PyObject *LoadsTyped_call(PyObject *self, PyObject *args, PyObject *kwds) {
    if (((LoadsTyped *)self)->reader == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "LoadsTyped is not initialised");
        return NULL;
    }
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 1) return LoadsTyped_one((LoadsTyped *)self, PyTuple_GET_ITEM(args, 0));
    return PyObject_Call(((LoadsTyped *)self)->slow, args, kwds);
}

static int LoadsTyped_traverse(LoadsTyped *self, visitproc visit, void *arg) {
    Py_VISIT(self->reader);
    Py_VISIT(self->slow);
    Py_VISIT(self->on_error);
    Py_VISIT(self->meter_state);
    return 0;
}

static int LoadsTyped_clear(LoadsTyped *self) {
    Py_CLEAR(self->reader);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->meter_state);
    return 0;
}

static void LoadsTyped_dealloc(LoadsTyped *self) {
    PyObject_GC_UnTrack(self);
    LoadsTyped_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject LoadsTypedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "serde_kit._reader.LoadsTyped",
    .tp_basicsize = sizeof(LoadsTyped),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "LoadsTyped(reader, slow, on_error, tiny_row, small_row[, max_row_bytes[, meter_state]]): a serializer's loads_typed whose "
              "small msgpack rows are read without a Python frame.",
    .tp_vectorcall_offset = offsetof(LoadsTyped, vectorcall),
    .tp_call = LoadsTyped_call,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)LoadsTyped_init,
    .tp_dealloc = (destructor)LoadsTyped_dealloc,
    .tp_traverse = (traverseproc)LoadsTyped_traverse,
    .tp_clear = (inquiry)LoadsTyped_clear,
};

/* For tests: what the reader takes as the hash of Decimal(text) it built, or None. */
static PyObject *module_decimal_text_hash(PyObject *module, PyObject *text) {
    (void)module;
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), digits = 0;
    const char *p = (const char *)PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) digits += p[i] >= '0' && p[i] <= '9';
    Py_hash_t hash = digits == 0 ? -1 : decimal_text_hash(p, n);
    if (hash == -1) Py_RETURN_NONE;
    return PyLong_FromSsize_t(hash);
}

static PyMethodDef module_methods[] = {
    {"decimal_text_hash", (PyCFunction)module_decimal_text_hash, METH_O,
     "hash(Decimal(text)) as the reader computes it for the Decimals it builds, or None (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef reader_module = {
    PyModuleDef_HEAD_INIT, "serde_kit._reader", "The optional compiled reader of serde_kit's read path.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__reader(void) {
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&LoadsTypedType) < 0) return NULL;
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    init_text_hash();
    init_hex_values();
    if (str_msgpack == NULL && (str_msgpack = PyUnicode_InternFromString("msgpack")) == NULL) return NULL;
    if (str_meter == NULL && (str_meter = PyUnicode_InternFromString("meter")) == NULL) return NULL;
    if (str_int == NULL && (str_int = PyUnicode_InternFromString("int")) == NULL) return NULL;
    if (str_is_safe == NULL && (str_is_safe = PyUnicode_InternFromString("is_safe")) == NULL) return NULL;
    if (str_dict == NULL && (str_dict = PyUnicode_InternFromString("__dict__")) == NULL) return NULL;
    if (str_validator == NULL && (str_validator = PyUnicode_InternFromString("__pydantic_validator__")) == NULL) return NULL;
    if (str_validate_python == NULL && (str_validate_python = PyUnicode_InternFromString("validate_python")) == NULL) return NULL;
    if (str_by_name == NULL && (str_by_name = PyUnicode_InternFromString("by_name")) == NULL) return NULL;
    if (by_name_kwnames == NULL && (by_name_kwnames = PyTuple_Pack(1, str_by_name)) == NULL) return NULL;
    struct { PyObject **slot; const char *text; } strs[] = {
        {&str_fields_set, "__pydantic_fields_set__"}, {&str_extra, "__pydantic_extra__"},
        {&str_private, "__pydantic_private__"}, {&str_tool_call, "tool_call"},
        {&str_invalid_tool_call, "invalid_tool_call"}, {&str_success, "success"}, {&str_error, "error"},
        {&str_tool_calls, "tool_calls"}, {&str_name, "name"}, {&str_args, "args"}, {&str_id, "id"},
        {&str_type, "type"}, {&str_additional_kwargs, "additional_kwargs"}, {&str_tzinfo, "tzinfo"}, {&str_itemsize, "itemsize"}, {&str_hasobject, "hasobject"}, {&str_dtype, "dtype"},
    };
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (*strs[i].slot == NULL && (*strs[i].slot = PyUnicode_InternFromString(strs[i].text)) == NULL) return NULL;
    }
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL) return NULL;
    struct { PyObject **slot; const char *text; } names[] = {
        {&str_check, "check"}, {&str_tracked, "tracked"}, {&str_decode, "decode"}, {&str_mark, "mark"}, {&str_redo, "redo"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    }
    if (Retrack == NULL &&
        (Retrack = PyErr_NewException("serde_kit._reader.Retrack", PyExc_BaseException, NULL)) == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&reader_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObjectRef(m, "LoadsTyped", (PyObject *)&LoadsTypedType) < 0 ||
        PyModule_AddIntConstant(m, "KIND_CALL", KIND_CALL) < 0 || PyModule_AddIntConstant(m, "KIND_TUPLE", KIND_TUPLE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_INTS3", KIND_INTS3) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DATETIME", KIND_DATETIME) < 0 ||
        PyModule_AddIntConstant(m, "KIND_UUID", KIND_UUID) < 0 || PyModule_AddIntConstant(m, "KIND_ENUM", KIND_ENUM) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DATACLASS", KIND_DATACLASS) < 0 ||
        PyModule_AddIntConstant(m, "KIND_PYDANTIC", KIND_PYDANTIC) < 0 || PyModule_AddIntConstant(m, "MAX_ENTRIES", MAX_ENTRIES) < 0 ||
        PyModule_AddIntConstant(m, "EXT_FRAMES", EXT_FRAMES) < 0 ||
        PyModule_AddIntConstant(m, "KIND_MESSAGE", KIND_MESSAGE) < 0 || PyModule_AddIntConstant(m, "KIND_ISO", KIND_ISO) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DECIMAL", KIND_DECIMAL) < 0 || PyModule_AddIntConstant(m, "KIND_SET", KIND_SET) < 0 ||
        PyModule_AddIntConstant(m, "KIND_ZONE", KIND_ZONE) < 0 || PyModule_AddIntConstant(m, "KIND_DEQUE", KIND_DEQUE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_PATH", KIND_PATH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *checks = PyTuple_New(CHECK_LAST + 1);
    if (checks == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int i = 0; i <= CHECK_LAST; i++) {
        PyObject *name = PyUnicode_FromString(check_names[i]);
        if (name == NULL) {
            Py_DECREF(checks);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(checks, i, name);
    }
    int added = PyModule_AddObjectRef(m, "CHECKS", checks);
    Py_DECREF(checks);
    if (added < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
