#include <cstdio>

int main(int argc, char** argv) {
    std::puts("lmrun");
    return 0;
}
