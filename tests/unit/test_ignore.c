/* cli/ignore.c and cli/pack.c: every case of the shared .rungignore corpus
 * (tests/data/rungignore/cases.json, which the Python client passes too),
 * and a folder packed twice to the same bytes, with a link leaving it and a
 * FIFO refused by name. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ignore.h"
#include "pack.h"

#ifndef RUNG_IGNORE_CORPUS
#error "RUNG_IGNORE_CORPUS: the corpus file (tests/unit/CMakeLists.txt)"
#endif

/* Whether the walk packs path: every folder above it packed, and it. */
static bool packed(const CliIgnore *ig, const char *path, json_t *venvs)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    size_t len = strlen(buf);
    bool is_dir = len > 0 && buf[len - 1] == '/';
    if (is_dir)
        buf[--len] = '\0';
    for (char *s = strchr(buf, '/'); s != NULL; s = strchr(s + 1, '/')) {
        *s = '\0';
        char dir[520];
        snprintf(dir, sizeof dir, "%s/", buf);
        bool venv = false;
        size_t i;
        json_t *v;
        json_array_foreach(venvs, i, v)
            venv |= strcmp(json_string_value(v), dir) == 0;
        bool ok = cli_ignore_packed(ig, buf, true, venv);
        *s = '/';
        if (!ok)
            return false;
    }
    bool venv = false;
    size_t i;
    json_t *v;
    json_array_foreach(venvs, i, v)
        venv |= is_dir && strncmp(json_string_value(v), path, len) == 0 &&
                strlen(json_string_value(v)) == len + 1;
    return cli_ignore_packed(ig, buf, is_dir, venv);
}

static void test_corpus(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *doc = json_load_file(RUNG_IGNORE_CORPUS, 0, &jerr);
    assert_non_null(doc);
    json_t *cases = json_object_get(doc, "cases");
    assert_true(json_array_size(cases) >= 25);
    int failures = 0, checked = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *text = json_string_value(json_object_get(c, "rungignore"));
        CliIgnore *ig = cli_ignore_new(text, strlen(text));
        const char *path;
        json_t *want;
        json_object_foreach(json_object_get(c, "paths"), path, want) {
            bool got = packed(ig, path, json_object_get(c, "venvs"));
            checked++;
            if (got != json_is_true(want)) {
                failures++;
                printf("case '%s': %s is %s, want %s\n",
                       json_string_value(json_object_get(c, "name")), path,
                       got ? "packed" : "left out", json_is_true(want) ? "packed" : "left out");
            }
        }
        cli_ignore_free(ig);
    }
    printf("%d paths of %zu cases checked\n", checked, json_array_size(cases));
    json_decref(doc);
    assert_int_equal(failures, 0);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void test_pack_is_deterministic(void **state)
{
    (void)state;
    char top[] = "/tmp/rung-pack-XXXXXX", dir[600], p[700], tar1[700], tar2[700];
    assert_non_null(mkdtemp(top));
    snprintf(dir, sizeof dir, "%s/wd", top);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/pkg", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/pkg/__init__.py", dir);
    put(p, "X = 1\n");
    snprintf(p, sizeof p, "%s/train.py", dir);
    put(p, "import pkg\n");
    chmod(p, 0700);
    snprintf(p, sizeof p, "%s/skip.log", dir);
    put(p, "noise\n");
    snprintf(p, sizeof p, "%s/.rungignore", dir);
    put(p, "*.log\n");
    snprintf(p, sizeof p, "%s/link", dir);
    assert_int_equal(symlink("pkg/__init__.py", p), 0);
    snprintf(tar1, sizeof tar1, "%s/1.tar", top);
    snprintf(tar2, sizeof tar2, "%s/2.tar", top);
    CliPack a, b;
    char why[512];
    assert_int_equal(cli_pack_dir(dir, tar1, &a, why, sizeof why), 0);
    /* Later times, the same contents: the same bytes. */
    sleep(1);
    snprintf(p, sizeof p, "%s/train.py", dir);
    put(p, "import pkg\n");
    assert_int_equal(cli_pack_dir(dir, tar2, &b, why, sizeof why), 0);
    assert_string_equal(a.sha256, b.sha256);
    assert_int_equal(a.files, 4); /* .rungignore, link, pkg/__init__.py, train.py */
    size_t l1, l2;
    char *x = slurp(tar1, &l1), *y = slurp(tar2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(x, y, l1);
    assert_null(memmem(x, l1, "skip.log", 8));
    /* Sorted: .rungignore, link, pkg/, pkg/__init__.py, train.py. */
    char *r = memmem(x, l1, ".rungignore", 11), *l = memmem(x, l1, "link", 4),
         *t = memmem(x, l1, "train.py", 8);
    assert_true(r != NULL && l != NULL && t != NULL && r < l && l < t);
    free(x);
    free(y);
    /* A link leaving the folder, and a FIFO: refused by name, no file left. */
    snprintf(p, sizeof p, "%s/out", dir);
    assert_int_equal(symlink("../../etc/passwd", p), 0);
    unlink(tar1);
    assert_int_equal(cli_pack_dir(dir, tar1, &a, why, sizeof why), -1);
    assert_non_null(strstr(why, "out is a symbolic link to ../../etc/passwd"));
    assert_int_not_equal(access(tar1, F_OK), 0);
    unlink(p);
    snprintf(p, sizeof p, "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(cli_pack_dir(dir, tar1, &a, why, sizeof why), -1);
    assert_non_null(strstr(why, "fifo is not a file"));
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf %s", top);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_pack_is_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
