# SPDX-License-Identifier: MIT
# Run by the `docs` target after Doxygen: the reference it wrote holds what
# `make docs` promises.  The main page is the README (its first sentence);
# the guide, the reference and the internals are pages of their own;
# arena.hpp is documented (its file page and the class libarena::arena); and
# every link of those pages to another file of the reference, and to an
# anchor there, arrives.
#   cmake -DHTML=<html dir> -DSOURCE_DIR=<checkout> -P docs/check-html.cmake
cmake_minimum_required(VERSION 3.20)

# first_match(FILE REGEX OUT): the first group of the first line of FILE that
# matches REGEX.
function(first_match file regex out)
  file(STRINGS ${file} lines REGEX "${regex}")
  list(GET lines 0 line)
  string(REGEX MATCH "${regex}" line "${line}")
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# check(FILE TEXT WHAT): FILE exists and holds TEXT.
function(check file text what)
  if(NOT EXISTS ${HTML}/${file})
    message(FATAL_ERROR "docs: no ${file}: ${what}")
  endif()
  file(READ ${HTML}/${file} html)
  string(FIND "${html}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "docs: ${file} does not hold \"${text}\": ${what}")
  endif()
endfunction()

# links(FILE): each href of FILE to a file of the reference names one that
# exists, and an anchor there that exists.
function(links file)
  file(READ ${HTML}/${file} html)
  string(REGEX MATCHALL "href=\"[^\":]*\"" hrefs "${html}")
  list(REMOVE_DUPLICATES hrefs)
  foreach(href IN LISTS hrefs)
    string(REGEX REPLACE "^href=\"([^\"#]*)#?([^\"]*)\"$" "\\1;\\2" parts "${href}")
    list(GET parts 0 target)
    list(GET parts 1 anchor)
    if(target STREQUAL "")
      set(target ${file})
    endif()
    if(NOT EXISTS ${HTML}/${target})
      message(FATAL_ERROR "docs: ${file} links to ${target}, which is not there")
    endif()
    if(anchor)
      file(READ ${HTML}/${target} there)
      string(FIND "${there}" "id=\"${anchor}\"" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "docs: ${file} links to ${target}#${anchor}, which has no such anchor")
      endif()
    endif()
  endforeach()
endfunction()

first_match(${SOURCE_DIR}/README.md "^(libarena is [^,.]*)" readme)
first_match(${SOURCE_DIR}/docs/guide.md "^# (.*)$" guide)
check(index.html "${readme}" "the main page is not the README")
check(guide.html "${guide}" "docs/guide.md is not a page")
check(arena_8hpp.html "libarena::arena" "arena.hpp is not documented")
check(classlibarena_1_1arena.html "libarena::arena" "the C++ classes are not documented")
check(reference.html "The API at a glance" "docs/reference.md is not a page")
check(internals.html "how the arena keeps its promises" "docs/internals.md is not a page")
foreach(page index.html guide.html reference.html internals.html)
  links(${page})
endforeach()
message(STATUS "docs: the README is the main page; the guide, the reference, the internals "
               "and arena.hpp are in; their links arrive")
