// Package store is the fabric's state in SQLite (modernc.org/sqlite, no
// cgo): the schema, one transaction per write (Txn), and the rows of
// resource groups, resources, subnet ↔ route table associations,
// long-running operations and authorization objects. It knows SQL and
// rows, not what the documents in them mean: the providers decode them.
//
// A Store opened on a file may be shared by several processes; Subscribe
// wakes this process's readers after each committed write.
package store
