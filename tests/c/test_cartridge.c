#include <criterion/criterion.h>
Test(dummy, x) {}
