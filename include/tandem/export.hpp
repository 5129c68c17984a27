// Symbols of the shared library that users may call; everything else stays hidden.
#pragma once

#if defined(_WIN32)
#define TANDEM_API __declspec(dllexport)
#else
#define TANDEM_API __attribute__((visibility("default")))
#endif
