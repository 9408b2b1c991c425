// SPDX-License-Identifier: MIT
// A C++ program built from a release tarball (scripts/dist-check.sh).
#include <arena/arena.hpp>

#include <cstdio>
#include <cstring>
#include <memory_resource>
#include <string>
#include <vector>

int main()
{
    libarena::arena a;
    libarena::resource r(a);
    std::pmr::vector<std::pmr::string> v(&r);
    for (int i = 0; i < 100; i++)
        v.emplace_back(std::to_string(i) + " a string longer than the small buffer");
    libarena::pool<double> p(8);
    double *d = p.allocate();
    bool ok = v.size() == 100 && v[99].compare(0, 3, "99 ") == 0 && a.size() > 0 && d &&
              p.used() == 1 && std::strcmp(arena_version(), ARENA_VERSION_STRING) == 0;
    p.deallocate(d);
    std::printf("dist consumer (C++): libarena %s: %s\n", arena_version(), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
