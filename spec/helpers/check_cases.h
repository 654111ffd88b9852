/*
 * check_cases.h: the case runner the C check programs of the specs share
 * (the .c files of spec/helpers whose "ok CASE" lines a spec reads). A case
 * prints "FAIL CASE: why" for each thing it finds wrong and counts it in the
 * program's failures; the runner prints "ok CASE" for each case that found
 * nothing.
 */
#ifndef PP_CHECK_CASES_H
#define PP_CHECK_CASES_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
  void (*run)(const char *name);
  const char *name;
} check_case;

/* Runs cases[0..n) in order; *failures is the count the cases add to. */
static inline void check_cases_run(const check_case *cases, size_t n,
                                   const int *failures) {
  for (size_t i = 0; i < n; i++) {
    int before = *failures;
    cases[i].run(cases[i].name);
    if (*failures == before)
      printf("ok %s\n", cases[i].name);
  }
}
#define CHECK_CASES_RUN(cases, failures)                                       \
  check_cases_run(cases, sizeof(cases) / sizeof(cases)[0], &(failures))

#endif
