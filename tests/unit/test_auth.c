/* server/auth.c: each role against each access rule (docs/api.md, "Roles
 * per route"), ownership and holding, the tokens' form and hash, and the
 * slowing of unknown tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"

static Principal as(Role r, int64_t user)
{
    Principal p = {.role = r, .user_id = user};
    return p;
}

static int decide(Role r, int64_t user, Access a, int64_t owner, bool holds)
{
    Principal p = as(r, user);
    AccessFacts f = {.owner_id = owner, .holds = holds};
    RungError err;
    rung_error_clear(&err);
    int rc = auth_decide(&p, a, &f, &err);
    if (rc != 0) {
        assert_int_equal(rc, RUNG_E_FORBIDDEN);
        assert_int_equal(strncmp(err.message, "rule ", 5), 0); /* names the rule */
    }
    return rc;
}

/* Who each rule lets in, as the docs' table says, for every role; the
 * member owns experiment 7's owner 7 and the worker holds when told. */
static void test_matrix(void **state)
{
    (void)state;
    /* [rule][role]: 1 allowed. Ownership and holding as given below. */
    static const int allowed[ACCESS__COUNT][ROLE__COUNT] = {
        [ACCESS_PUBLIC] = {1, 1, 1, 1},       [ACCESS_READ] = {1, 1, 1, 0},
        [ACCESS_READ_WORKER] = {1, 1, 1, 1},  [ACCESS_SUBMIT] = {1, 1, 0, 0},
        [ACCESS_STEER_EXP] = {1, 1, 0, 0},    [ACCESS_STEER_TRIAL] = {1, 1, 0, 0},
        [ACCESS_WORKER] = {1, 0, 0, 1},       [ACCESS_WORKER_ID] = {1, 0, 0, 1},
        [ACCESS_WORKER_TRIAL] = {1, 0, 0, 1}, [ACCESS_ADMIN] = {1, 0, 0, 0},
        [ACCESS_SELF] = {1, 1, 1, 1},
    };
    for (int a = 0; a < ACCESS__COUNT; a++)
        for (int r = 0; r < ROLE__COUNT; r++) {
            int rc = decide((Role)r, 7, (Access)a, 7, true);
            assert_int_equal(rc == 0, allowed[a][r]);
        }
    /* Another member's experiment, an experiment of nobody's (before
     * users), another token's worker: only the admin. */
    assert_int_not_equal(decide(ROLE_MEMBER, 8, ACCESS_STEER_EXP, 7, false), 0);
    assert_int_not_equal(decide(ROLE_MEMBER, 8, ACCESS_STEER_TRIAL, -1, false), 0);
    assert_int_equal(decide(ROLE_ADMIN, 8, ACCESS_STEER_EXP, -1, false), 0);
    assert_int_not_equal(decide(ROLE_WORKER, 3, ACCESS_WORKER_ID, -1, false), 0);
    assert_int_not_equal(decide(ROLE_WORKER, 3, ACCESS_WORKER_TRIAL, -1, false), 0);
    assert_int_equal(decide(ROLE_ADMIN, 0, ACCESS_WORKER_TRIAL, -1, false), 0);
    /* The bootstrap admin (user 0) owns what it submitted. */
    assert_int_equal(decide(ROLE_MEMBER, 0, ACCESS_STEER_EXP, 0, false), 0);
}

static void test_names(void **state)
{
    (void)state;
    Role r;
    for (int i = 0; i < ROLE__COUNT; i++) {
        assert_int_equal(role_parse(role_name((Role)i), &r), 0);
        assert_int_equal(r, i);
    }
    assert_int_equal(role_parse("Admin", &r), -1);
    assert_int_equal(role_parse("", &r), -1);
    assert_int_equal(role_parse(NULL, &r), -1);
    assert_true(auth_user_name_ok("alice.b-c_d@team"));
    assert_false(auth_user_name_ok(""));
    assert_false(auth_user_name_ok("a b"));
    assert_false(auth_user_name_ok("é"));
    char long_name[AUTH_NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[AUTH_NAME_MAX + 1] = '\0';
    assert_false(auth_user_name_ok(long_name));
    long_name[AUTH_NAME_MAX] = '\0';
    assert_true(auth_user_name_ok(long_name));
}

static void test_tokens(void **state)
{
    (void)state;
    char a[AUTH_TOKEN_LEN + 1], b[AUTH_TOKEN_LEN + 1];
    auth_token_new(a);
    auth_token_new(b);
    assert_int_equal(strlen(a), AUTH_TOKEN_LEN);
    assert_int_equal(strncmp(a, "rung_", 5), 0);
    assert_int_equal(strspn(a + 5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789-_"),
                     43);
    assert_string_not_equal(a, b);
    /* Of 200 tokens, every character position varies (no stuck bits). */
    unsigned seen[AUTH_TOKEN_LEN] = {0};
    char first[AUTH_TOKEN_LEN + 1];
    auth_token_new(first);
    for (int i = 0; i < 200; i++) {
        auth_token_new(b);
        for (int k = 5; k < AUTH_TOKEN_LEN; k++)
            seen[k] |= b[k] != first[k];
    }
    for (int k = 5; k < AUTH_TOKEN_LEN; k++)
        assert_true(seen[k]);
    /* SHA-256 of "abc" (FIPS 180-2). */
    char hex[65];
    auth_token_hash("abc", hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_throttle(void **state)
{
    (void)state;
    static AuthThrottle t;
    unsigned char key[16] = {10, 0, 0, 1}, other[16] = {10, 0, 0, 2};
    int64_t now = 1000000;
    for (int i = 0; i < AUTH_FREE_FAILURES - 1; i++) {
        assert_int_equal(auth_throttle_wait(&t, key, now), 0);
        auth_throttle_fail(&t, key, now);
    }
    assert_int_equal(auth_throttle_wait(&t, key, now), 0);
    auth_throttle_fail(&t, key, now); /* the 5th: 1 s */
    assert_int_equal(auth_throttle_wait(&t, key, now), 1);
    assert_int_equal(auth_throttle_wait(&t, other, now), 0); /* another address is not held */
    assert_int_equal(auth_throttle_wait(&t, key, now + 1000), 0);
    auth_throttle_fail(&t, key, now + 1000); /* 2 s, 4 s, ... */
    assert_int_equal(auth_throttle_wait(&t, key, now + 1000), 2);
    int64_t at = now + 3000;
    for (int i = 0; i < 10; i++) {
        auth_throttle_fail(&t, key, at);
        at += 1000;
    }
    assert_int_equal(auth_throttle_wait(&t, key, at - 1000), AUTH_MAX_BLOCK_S);
    /* A quiet minute past the wait starts over. */
    at += (AUTH_MAX_BLOCK_S + 61) * 1000;
    assert_int_equal(auth_throttle_wait(&t, key, at), 0);
    auth_throttle_fail(&t, key, at);
    assert_int_equal(auth_throttle_wait(&t, key, at), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_throttle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
