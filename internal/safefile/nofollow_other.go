//go:build !unix

package safefile

// noFollow is 0 where the open flag does not exist; OpenPrivate then checks with Lstat first.
const noFollow = 0
