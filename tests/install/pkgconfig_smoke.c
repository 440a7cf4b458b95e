/* Compiled against an installed libdeg through `pkg-config --cflags --libs
 * deg` by check_install.sh: the header and the shared library agree. */
#include <deg.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("%s\n", deg_version());
    if (strcmp(deg_version(), DEG_VERSION_STRING) != 0) return 1;
    if (strcmp(deg_status_name(DEG_ERR_FORMAT), "DEG_ERR_FORMAT") != 0) return 1;
    return 0;
}
