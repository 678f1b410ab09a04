# Finds the Debian packages perfscript links against. No third-party source lives here:
# only the glue that locates headers and static libraries installed by apt (see setup.sh).
find_package(PkgConfig REQUIRED)

# Lua 5.4 (liblua5.4-dev): static library, so the binary carries its interpreter.
pkg_check_modules(LUA54 REQUIRED lua5.4)
find_library(LUA54_STATIC NAMES liblua5.4.a lua5.4 REQUIRED)

# C modules for Lua 5.4 shipped by Debian as static archives (lua-filesystem-dev, lua-cjson-dev).
find_library(LUA_LFS_STATIC NAMES liblua5.4-filesystem.a REQUIRED)
find_library(LUA_CJSON_STATIC NAMES liblua5.4-cjson.a REQUIRED)

find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_STATIC NAMES libxxhash.a xxhash REQUIRED)

find_path(YAJL_INCLUDE_DIR yajl/yajl_parse.h REQUIRED)
find_library(YAJL_STATIC NAMES libyajl_s.a yajl REQUIRED)

find_path(READLINE_INCLUDE_DIR readline/readline.h REQUIRED)
find_library(READLINE_LIB NAMES readline REQUIRED)

pkg_check_modules(CMOCKA cmocka)
