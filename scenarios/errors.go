package scenarios

import "github.com/vnetbench/vnetbench/internal/schema"

// Error is a bad scenario: a file position and a message that says what is
// wrong and how to fix it. It prints as "file:line:col: msg" (the parts that
// are known) and maps to exit code 2.
type Error = schema.Error
