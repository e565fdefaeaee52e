#pragma once
// fast-cpp-csv-parser (<csv.h>, Debian's libfccp-dev), for targets that link tessera_fccp.

// GCC flags fccp's bounded strncpy of file names once it is inlined (-O3).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <csv.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
