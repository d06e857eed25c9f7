package api

// DefaultTenant is the tenant every subscription of the fabric belongs to
// and every token names.
const DefaultTenant = "00000000-0000-0000-0000-00000000fab1"
