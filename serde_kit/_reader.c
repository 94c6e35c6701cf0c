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
 * Every length is checked against the bytes left before anything is read or
 * allocated.  Decode functions return a new reference, or NULL: with an
 * exception set (a real error, raised as is) or without one ("soft": the
 * bytes are not what this reader takes; the caller hands them to Python).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define EXT_FRAMES 10
#define TABLE_SLOTS 1024 /* a power of two */
#define MAX_ENTRIES 512  /* at most half the slots: probes stay short */

enum {
    KIND_CALL = 0,     /* fn(env): the Python rebuilder the allowlist's verdict chose */
    KIND_TUPLE = 1,    /* tuple(env[2]) for a list */
    KIND_INTS3 = 2,    /* cls(a, b, c) for three exact ints: date, timedelta */
    KIND_DATETIME = 3, /* cls(*env[2]) for 8 items, the last None or of a type in param */
    KIND_UUID = 4,     /* object.__new__(cls), int from 32 hex digits, is_safe = param */
    KIND_ENUM = 5,     /* param[env[2]] for an exact str or int found in the member map param */
    KIND_DATACLASS = 6, /* object.__new__(cls) + __dict__.update(env[2]) when its keys are param, in order */
    KIND_PYDANTIC = 7, /* cls.__pydantic_validator__.validate_python(env[2][, by_name=True if param]) */
    KIND_LAST = 7
};
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
} Entry;

typedef struct {
    PyObject_HEAD
    PyObject *fallback;    /* the msgspec decoder of the pure path (top level) */
    PyObject *hooks;       /* tuple: the Python ext hook of each nesting level */
    PyObject *learn;       /* callable(code, head, view) after a hook built a value, or None */
    PyObject *construct;   /* callable(code, env): the pure path's checked path after a failed rebuild */
    PyObject *track;       /* callable(value) counting a typed value's hash (rows that may flood), or None */
    PyObject *keyed;       /* frozenset: types whose hash is keyed per process (never tracked) */
    PyObject *serde_error; /* the base class of the errors the pure path raises on purpose */
    Py_ssize_t max_ext_depth;
    int safe_recursion_limit;
    Py_ssize_t nentries;
    Entry table[TABLE_SLOTS];
} Reader;

typedef struct {
    Reader *r;
    PyObject *src;            /* the row object */
    const unsigned char *base; /* its first byte */
    PyObject *view;           /* memoryview of the row, made on the first hook call */
    PyObject *mark;           /* fallback.mark() before this row's first Python call, or NULL */
} State;

static PyObject *decode_value(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t level);

static PyObject *str_int, *str_is_safe, *str_dict, *str_validator, *str_validate_python, *str_by_name;
static PyObject *by_name_kwnames; /* ("by_name",) */

/* Short map keys, kept with their hash: rows repeat the same few field names. */
#define KEY_CACHE_SIZE 512
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
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
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

static PyObject *make_key(const unsigned char *p, Py_ssize_t n) {
    if (n == 0 || n > KEY_CACHE_MAX_LEN) return make_str(p, n);
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    PyObject **slot = &key_cache[h & (KEY_CACHE_SIZE - 1)];
    PyObject *found = *slot;
    if (found != NULL && PyUnicode_GET_LENGTH(found) == n && memcmp(PyUnicode_DATA(found), p, (size_t)n) == 0) {
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

/* Before the row's first call into Python that may charge the work meter: where the
 * meter stands, so that handing the row to the fallback re-reads it from there (the
 * pure path charges each step of a row once). */
static int mark_meter(State *st) {
    if (st->mark == NULL) st->mark = PyObject_CallMethod(st->r->fallback, "mark", NULL);
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

/* The value a C kind builds from its one argument; NULL without an exception = not this shape. */
static PyObject *build_kind(Entry *e, PyObject *arg) {
    switch (e->kind) {
    case KIND_TUPLE:
        if (!PyList_CheckExact(arg)) return NULL;
        return PyList_AsTuple(arg);
    case KIND_INTS3: {
        if (!PyList_CheckExact(arg) || PyList_GET_SIZE(arg) != 3) return NULL;
        PyObject *a = PyList_GET_ITEM(arg, 0), *b = PyList_GET_ITEM(arg, 1), *c = PyList_GET_ITEM(arg, 2);
        if (!exact_int(a) || !exact_int(b) || !exact_int(c)) return NULL;
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
            PyObject *expected = PyTuple_GET_ITEM(e->param, i++);
            if (!PyUnicode_CheckExact(key)) return NULL;
            if (key != expected) {
                int same = PyUnicode_Compare(key, expected);
                if (same == -1 && PyErr_Occurred()) return NULL;
                if (same != 0) return NULL;
            }
        }
        PyObject *empty = PyTuple_New(0);
        PyObject *value = empty == NULL ? NULL : PyBaseObject_Type.tp_new((PyTypeObject *)e->cls, empty, NULL);
        Py_XDECREF(empty);
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
    case KIND_UUID: {
        if (!PyUnicode_CheckExact(arg) || PyUnicode_GET_LENGTH(arg) != 32 || !PyUnicode_IS_ASCII(arg)) return NULL;
        const char *text = (const char *)PyUnicode_DATA(arg);
        for (int i = 0; i < 32; i++) {
            char ch = text[i];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) return NULL;
        }
        PyObject *number = PyLong_FromUnicodeObject(arg, 16);
        if (number == NULL) return NULL;
        PyObject *empty = PyTuple_New(0);
        PyObject *value = empty == NULL ? NULL : PyBaseObject_Type.tp_new((PyTypeObject *)e->cls, empty, NULL);
        Py_XDECREF(empty);
        if (value == NULL || PyObject_GenericSetAttr(value, str_int, number) < 0) {
            Py_DECREF(number);
            Py_XDECREF(value);
            return NULL;
        }
        Py_DECREF(number);
        if (PyObject_GenericSetAttr(value, str_is_safe, e->param) < 0) {
            Py_DECREF(value);
            return NULL;
        }
        return value;
    }
    }
    return NULL;
}

/* Decode the envelope items after the head and build the value of entry e. */
static PyObject *build_entry(State *st, Entry *e, const unsigned char *q, const unsigned char *pend, Py_ssize_t level) {
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
    PyObject *value = NULL;
    if (e->kind != KIND_CALL) {
        value = build_kind(e, PyList_GET_ITEM(env, 2));
        if (value == NULL && PyErr_Occurred() && !retry_in_python(st->r)) {
            Py_DECREF(env);
            return NULL;
        }
    }
    if (value == NULL) {
        /* KIND_CALL, or a shape (or failure) the C kind leaves to its Python rebuilder */
        if (mark_meter(st) < 0) {
            Py_DECREF(env);
            return NULL;
        }
        value = PyObject_CallOneArg(e->fn, env);
        if (value == NULL && retry_in_python(st->r)) {
            /* What the pure path's hot path does next, with the same envelope (calling the
             * hook instead would run the rebuilder, and charge its work, once more). */
            PyObject *code_obj = PyLong_FromLong(e->code);
            if (code_obj != NULL) {
                value = PyObject_CallFunctionObjArgs(st->r->construct, code_obj, env, NULL);
                Py_DECREF(code_obj);
            }
        }
    }
    Py_DECREF(env);
    return value;
}

/* An ext of `code` whose payload is [p, p + n), found in content `level` levels deep. */
static PyObject *decode_ext(State *st, int code, const unsigned char *p, Py_ssize_t n, Py_ssize_t level) {
    Reader *r = st->r;
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
    if (enter_ext() < 0) return NULL;
    PyObject *value = build_entry(st, e, q, pend, level);
    leave_ext();
    if (value == NULL && !PyErr_Occurred()) return call_hook(st, code, p, n, level, NULL);
    if (value != NULL && r->track != Py_None && Py_TYPE(value)->tp_hash != PyObject_HashNotImplemented) {
        /* as the pure path's tracked hook: every hashable typed value of a row that may flood */
        int keyed = PySet_Contains(r->keyed, (PyObject *)Py_TYPE(value));
        PyObject *done = keyed ? NULL : PyObject_CallOneArg(r->track, value);
        if (keyed < 0 || (keyed == 0 && done == NULL)) Py_CLEAR(value);
        Py_XDECREF(done);
    }
    return value;
}

/* --- values ---------------------------------------------------------------- */

static PyObject *decode_array(State *st, const unsigned char **pp, const unsigned char *end, Py_ssize_t n,
                              Py_ssize_t level) {
    if (end - *pp < n) return NULL; /* each item takes a byte at least */
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
    if (Py_EnterRecursiveCall(" while decoding a stored value")) return NULL;
    PyObject *dict = PyDict_New();
    if (dict != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
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

static PyObject *Reader_decode(Reader *self, PyObject *data) {
    if (self->hooks == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is not initialised");
        return NULL;
    }
    if (Py_GetRecursionLimit() > self->safe_recursion_limit) {
        return PyObject_CallMethod(self->fallback, "decode", "O", data);
    }
    Py_buffer buffer;
    if (PyObject_GetBuffer(data, &buffer, PyBUF_SIMPLE) < 0) return NULL;
    State st = {self, data, (const unsigned char *)buffer.buf, NULL, NULL};
    const unsigned char *p = st.base, *end = st.base + buffer.len;
    PyObject *value = decode_value(&st, &p, end, 0);
    if (value != NULL && p != end) Py_CLEAR(value); /* trailing bytes: soft */
    Py_XDECREF(st.view);
    PyBuffer_Release(&buffer);
    if (value != NULL || (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_RecursionError))) {
        Py_XDECREF(st.mark);
        return value;
    }
    PyErr_Clear();
    if (st.mark == NULL) return PyObject_CallMethod(self->fallback, "decode", "O", data);
    /* Python was called (and may have charged the meter): the fallback rewinds first. */
    value = PyObject_CallMethod(self->fallback, "redo", "OO", data, st.mark);
    Py_DECREF(st.mark);
    return value;
}

static PyObject *Reader_register(Reader *self, PyObject *args) {
    int code, kind;
    PyObject *head, *method, *module, *name, *fn, *cls, *param;
    Py_ssize_t nitems;
    if (!PyArg_ParseTuple(args, "iO!nOUUiOOO:register", &code, &PyBytes_Type, &head, &nitems, &method, &module, &name,
                          &kind, &fn, &cls, &param)) {
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
    if (self->nentries >= MAX_ENTRIES) Py_RETURN_FALSE;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(head);
    Py_ssize_t n = PyBytes_GET_SIZE(head);
    uint64_t h = head_hash(code, p, n);
    if (table_find(self, code, p, n, h) != NULL) Py_RETURN_FALSE;
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
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        Entry *e = &self->table[i];
        if (e->head == NULL) continue;
        Py_VISIT(e->method);
        Py_VISIT(e->module);
        Py_VISIT(e->name);
        Py_VISIT(e->fn);
        Py_VISIT(e->cls);
        Py_VISIT(e->param);
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

static struct PyModuleDef reader_module = {
    PyModuleDef_HEAD_INIT, "serde_kit._reader", "The optional compiled reader of serde_kit's read path.", -1, NULL,
};

PyMODINIT_FUNC PyInit__reader(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    if (str_int == NULL && (str_int = PyUnicode_InternFromString("int")) == NULL) return NULL;
    if (str_is_safe == NULL && (str_is_safe = PyUnicode_InternFromString("is_safe")) == NULL) return NULL;
    if (str_dict == NULL && (str_dict = PyUnicode_InternFromString("__dict__")) == NULL) return NULL;
    if (str_validator == NULL && (str_validator = PyUnicode_InternFromString("__pydantic_validator__")) == NULL) return NULL;
    if (str_validate_python == NULL && (str_validate_python = PyUnicode_InternFromString("validate_python")) == NULL) return NULL;
    if (str_by_name == NULL && (str_by_name = PyUnicode_InternFromString("by_name")) == NULL) return NULL;
    if (by_name_kwnames == NULL && (by_name_kwnames = PyTuple_Pack(1, str_by_name)) == NULL) return NULL;
    PyObject *m = PyModule_Create(&reader_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "KIND_CALL", KIND_CALL) < 0 || PyModule_AddIntConstant(m, "KIND_TUPLE", KIND_TUPLE) < 0 ||
        PyModule_AddIntConstant(m, "KIND_INTS3", KIND_INTS3) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DATETIME", KIND_DATETIME) < 0 ||
        PyModule_AddIntConstant(m, "KIND_UUID", KIND_UUID) < 0 || PyModule_AddIntConstant(m, "KIND_ENUM", KIND_ENUM) < 0 ||
        PyModule_AddIntConstant(m, "KIND_DATACLASS", KIND_DATACLASS) < 0 ||
        PyModule_AddIntConstant(m, "KIND_PYDANTIC", KIND_PYDANTIC) < 0 || PyModule_AddIntConstant(m, "MAX_ENTRIES", MAX_ENTRIES) < 0 ||
        PyModule_AddIntConstant(m, "EXT_FRAMES", EXT_FRAMES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
