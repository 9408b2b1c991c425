// Must not compile: libarena::arena::make<T> refuses a T whose destructor
// matters (tests/CMakeLists.txt expects the static_assert's message).
#include <arena/arena.hpp>

#include <string>

int main()
{
    libarena::arena a;
    return a.make<std::string>("runs no destructor") != nullptr;
}
