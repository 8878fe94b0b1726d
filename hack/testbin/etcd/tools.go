//go:build tools

// Package tools pins etcd's server main package inside this module.
package tools

import _ "go.etcd.io/etcd/server/v3"
