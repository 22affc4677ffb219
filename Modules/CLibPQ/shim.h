// Debian's libpq-dev installs its headers under /usr/include/postgresql.
#include <postgresql/libpq-fe.h>
