/* A small stand-in for libFuzzer, linked with a fuzz target when the compiler
 * is not clang (the main gcc builds), so every build still runs the target's
 * checks: first over each file of the seed corpus, then over a fixed number
 * of pseudo-random mutations of them, seeded so that a failure reproduces.
 *
 *   fuzz_TARGET CORPUS_DIR RUNS [DICT]
 *
 * DICT is a libFuzzer dictionary (lines name="value", with \\, \" and \xNN
 * escapes); its values are spliced into inputs, which is how the mutations
 * reach tokens such as NaN that random bytes would almost never spell.
 * There is no coverage feedback: this is a smoke test, libFuzzer is the fuzzer.
 * When the target aborts, or a sanitizer stops it, the input at fault is
 * printed C-escaped on stderr before the process dies. */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs are kept short, as libFuzzer's -max_len in CMakeLists.txt does. */
#define INPUT_MAX 4096
/* More seeds or tokens than a target needs means a wrong folder was given. */
#define ITEMS_MAX 4096

typedef struct {
    uint8_t *data;
    size_t len;
} Blob;

typedef struct {
    Blob items[ITEMS_MAX];
    size_t count;
} Blobs;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* xorshift64*: fast, and the same sequence on every machine. */
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static size_t rng_below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rng() % n);
}

static void blobs_add(Blobs *b, const uint8_t *data, size_t len)
{
    if (b->count == ITEMS_MAX) {
        fprintf(stderr, "fuzz_driver: more than %d items\n", ITEMS_MAX);
        exit(2);
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL) {
        fprintf(stderr, "fuzz_driver: out of memory\n");
        exit(2);
    }
    memcpy(copy, data, len);
    b->items[b->count].data = copy;
    b->items[b->count].len = len;
    b->count++;
}

static void blobs_free(Blobs *b)
{
    for (size_t i = 0; i < b->count; i++)
        free(b->items[i].data);
    b->count = 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads every regular file of dir, in name order so runs are reproducible. */
static int load_corpus(const char *dir, Blobs *out)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        perror(dir);
        return -1;
    }
    char *names[ITEMS_MAX];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < ITEMS_MAX) {
        if (e->d_name[0] == '.')
            continue;
        names[n] = strdup(e->d_name);
        if (names[n] == NULL) {
            fprintf(stderr, "fuzz_driver: out of memory\n");
            exit(2);
        }
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], name_cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
            perror(path);
            rc = -1;
        } else {
            uint8_t buf[INPUT_MAX];
            size_t len = fread(buf, 1, sizeof buf, f);
            fclose(f);
            blobs_add(out, buf, len);
        }
        free(names[i]);
    }
    return rc;
}

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads a libFuzzer dictionary: the text between the first and the last '"'
 * of each line that is not a comment. */
static int load_dict(const char *path, Blobs *out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        char *open = strchr(line, '"');
        char *close = strrchr(line, '"');
        if (line[0] == '#' || open == NULL || close == open)
            continue;
        uint8_t value[1024];
        size_t n = 0;
        for (char *p = open + 1; p < close; p++) {
            if (*p == '\\' && p + 1 < close && p[1] == 'x' && p + 3 < close &&
                hex_value(p[2]) >= 0 && hex_value(p[3]) >= 0) {
                value[n++] = (uint8_t)(hex_value(p[2]) * 16 + hex_value(p[3]));
                p += 3;
            } else if (*p == '\\' && p + 1 < close) {
                value[n++] = (uint8_t)p[1];
                p++;
            } else {
                value[n++] = (uint8_t)*p;
            }
        }
        blobs_add(out, value, n);
    }
    fclose(f);
    return 0;
}

/* Changes buf (of *len bytes, room for INPUT_MAX) in one random way. */
static void mutate(uint8_t *buf, size_t *len, const Blobs *seeds, const Blobs *dict)
{
    size_t pos = rng_below(*len + 1);
    switch (rng_below(6)) {
    case 0: /* flip a bit */
        if (*len > 0)
            buf[pos % *len] ^= (uint8_t)(1u << rng_below(8));
        break;
    case 1: /* any byte */
        if (*len > 0)
            buf[pos % *len] = (uint8_t)rng();
        break;
    case 2: { /* delete a run */
        size_t n = rng_below(*len - pos + 1);
        if (n > 16)
            n = 16;
        memmove(buf + pos, buf + pos + n, *len - pos - n);
        *len -= n;
        break;
    }
    case 3:   /* insert a token of the dictionary */
    case 4: { /* or a piece of another seed */
        const Blobs *from = (rng_below(2) == 0 && dict->count > 0) ? dict : seeds;
        const Blob *src = &from->items[rng_below(from->count)];
        size_t off = from == dict ? 0 : rng_below(src->len + 1);
        size_t n = src->len - off;
        if (from != dict && n > 0)
            n = 1 + rng_below(n);
        if (n > INPUT_MAX - *len)
            n = INPUT_MAX - *len;
        memmove(buf + pos + n, buf + pos, *len - pos);
        memcpy(buf + pos, src->data + off, n);
        *len += n;
        break;
    }
    default: { /* repeat a run in place: long numbers, deep nesting */
        size_t n = rng_below(*len - pos + 1);
        if (n > 32)
            n = 32;
        for (int k = rng_below(8); k > 0 && n <= INPUT_MAX - *len; k--) {
            memmove(buf + pos + n, buf + pos, *len - pos);
            *len += n;
        }
        break;
    }
    }
}

/* The input being run, for the report of a failure. */
static const uint8_t *current;
static size_t current_len;

/* Writes the current input C-escaped to stderr; only write(2), as it runs in
 * a signal handler or a sanitizer's death callback. */
static void dump_current(void)
{
    static const char head[] = "fuzz_driver: failing input: \"";
    static const char hex[] = "0123456789abcdef";
    if (current == NULL || write(2, head, sizeof head - 1) < 0)
        return;
    for (size_t i = 0; i < current_len; i++) {
        uint8_t c = current[i];
        char out[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
        if (write(2, plain ? (const char *)&c : out, plain ? 1 : 4) < 0)
            return;
    }
    if (write(2, "\"\n", 2) < 0)
        return;
}

static void on_abort(int sig)
{
    dump_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Hands the target an exact-size heap copy, so ASan sees reads past its end. */
static void run_one(const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL) {
        fprintf(stderr, "fuzz_driver: out of memory\n");
        exit(2);
    }
    memcpy(copy, data, len);
    current = copy;
    current_len = len;
    LLVMFuzzerTestOneInput(copy, len);
    current = NULL;
    free(copy);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s CORPUS_DIR RUNS [DICT]\n", argv[0]);
        return 2;
    }
    long runs = strtol(argv[2], NULL, 10);
    signal(SIGABRT, on_abort);
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_set_death_callback(dump_current);
#endif
    static Blobs seeds;
    static Blobs dict;
    if (load_corpus(argv[1], &seeds) != 0 || (argc == 4 && load_dict(argv[3], &dict) != 0))
        return 2;
    if (seeds.count == 0) {
        fprintf(stderr, "fuzz_driver: no seeds in %s\n", argv[1]);
        return 2;
    }

    long executions = 0;
    for (size_t i = 0; i < seeds.count; i++, executions++)
        run_one(seeds.items[i].data, seeds.items[i].len);

    static uint8_t buf[INPUT_MAX];
    for (long r = 0; r < runs; r++, executions++) {
        const Blob *seed = &seeds.items[rng_below(seeds.count)];
        size_t len = seed->len;
        memcpy(buf, seed->data, len);
        for (int k = 1 + rng_below(8); k > 0; k--)
            mutate(buf, &len, &seeds, &dict);
        run_one(buf, len);
    }
    printf("fuzz_driver: %ld executions (%zu seeds, %zu dictionary tokens), no failure\n",
           executions, seeds.count, dict.count);
    blobs_free(&seeds);
    blobs_free(&dict);
    return 0;
}
