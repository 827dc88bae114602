package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// Root starts a program the way a VM's init starts the one program it
// exists for (lab init, a lab VM's PID 1, runs the inner vnetbench so).
// The child is chrooted into Dir (Cmd.Dir is then a directory inside it,
// "" = /); its environment is exactly Cmd.Env, not the caller's with Env
// added (a PID 1 holds only the kernel's leftovers from its command line);
// it leads a session of its own, not only a process group (setpgid fails
// with EPERM on a session leader; the session's first group is still the
// one Signal, Stop and a cancelled context kill); and a Stdout or Stderr
// that is an *os.File becomes the child's own descriptor, not a pipe, so
// that a console stays a terminal and Wait does not wait on grandchildren
// that hold it. Output then keeps nothing of that stream.
type Root struct {
	// Dir is the directory the child is chrooted into.
	Dir string
	// Path is the program's file, inside Dir; Argv[0] is then only the
	// name the program sees as its own.
	Path string
}

// rootCmd is c's exec.Cmd when c.Root is set; it fills the descriptors
// of p's output tails. With a Root, Argv[0] is not looked up in the
// caller's PATH: that PATH names files outside the new root.
func rootCmd(c Cmd, p *realProc) (*exec.Cmd, error) {
	r := c.Root
	switch {
	case r.Dir == "" || r.Path == "":
		return nil, errors.New("a chrooted command needs Root.Dir and Root.Path")
	case c.Netns != "":
		return nil, errors.New("a chrooted command cannot run in a named netns (ip is looked up outside the root)")
	}
	dir := c.Dir
	if dir == "" {
		dir = "/"
	}
	env := c.Env
	if env == nil {
		env = []string{} // nil would be the caller's environment
	}
	cmd := &exec.Cmd{
		Path:        r.Path,
		Args:        c.Argv,
		Env:         env,
		Dir:         dir,
		Stdin:       c.Stdin,
		ExtraFiles:  c.ExtraFiles,
		SysProcAttr: &syscall.SysProcAttr{Chroot: r.Dir, Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	cmd.Stdout, cmd.Stderr = streams(c, p, direct)
	return cmd, nil
}

// direct is w itself when it is a file (the child writes to it with no
// copy in between), else w with t keeping its tail.
func direct(t *tail, w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return teeTail(t, w)
}
