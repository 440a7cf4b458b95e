/* The library version string and deg_free (for memory libdeg hands out). */
#include <stdlib.h>

#include "deg.h"

const char *deg_version(void) { return DEG_VERSION_STRING; }

void deg_free(void *ptr) { free(ptr); }
