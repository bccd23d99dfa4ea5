// Package architecture holds only tests: the rules of which package may link
// which, checked with `go list` over every binary of the module. Production
// binaries are every main package but the dev and bench tools
// (devBinaries); a new main is production until it is listed there. The rule
// of which package's SQL may touch which table is orders's
// (orders/ownership_test.go), beside the tables it guards.
package architecture
