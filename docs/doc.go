// Package docs holds the project's documentation (the Markdown pages
// beside this file). It has no code: its test runs every command the
// pages and the README show and checks what they say it prints (see
// internal/doctest for the convention).
package docs
