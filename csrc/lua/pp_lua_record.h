/*
 * pp_lua_record.h: what the record binding (lua_record.c) gives the other
 * binding files besides pp_lua.h: a record's fields as a store takes them,
 * for pp.parse.list (lua_parse_list.c); not installed.
 */
#ifndef PP_LUA_RECORD_H
#define PP_LUA_RECORD_H

#include "pp_cols_internal.h"
#include "pp_lua.h"

/* With a record ("phaseprobe.record") at idx: its fields and tags in line
 * order into f (room for PP_PARSE_MAX_TOKENS), their count in *nf and its
 * prefix in *prefix, all pointing into the record or its store, which the
 * caller keeps on the stack; returns 1. Any other value: 0, nothing set.
 * Raises when the store a row record belongs to was closed. */
int pp_lua_record_fields(lua_State *L, int idx, pp_cols_field *f, size_t *nf,
                         const char **prefix);

#endif
