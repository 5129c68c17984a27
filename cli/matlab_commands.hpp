// `tandem run FILE.m`, `tandem eval CODE` and the prompt: the MATLAB front end on a runtime made
// from the environment. Each returns the process's exit status: 0, or 1 after an error in the
// MATLAB code (reported as MATLAB reports it, on standard error).
#pragma once

#include <string>
#include <vector>

int run_matlab_file(const std::string& path, const std::vector<std::string>& args);
int run_matlab_eval(const std::string& code);
/// The interactive prompt (line editing and history through readline) on a terminal; without
/// one, standard input is read and run as a script.
int run_matlab_prompt();
