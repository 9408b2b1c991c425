// SPDX-License-Identifier: MIT
// A C++ program built by Meson against libarena's C++ layer.
#include <arena/arena.hpp>

#include <cstdio>
#include <memory_resource>
#include <string>
#include <vector>

int main()
{
    libarena::arena a;
    libarena::resource r(a);
    std::pmr::vector<std::pmr::string> v(&r);
    for (int i = 0; i < 100; i++)
        v.emplace_back(std::to_string(i) + " a string past the small buffer");
    libarena::pool<double> p(8);
    double *d = p.allocate();
    bool ok = v.size() == 100 && a.size() > 0 && d && p.used() == 1;
    p.deallocate(d);
    std::printf("libarena C++: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
