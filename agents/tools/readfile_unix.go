//go:build unix

package tools

import (
	"errors"
	"golang.org/x/sys/unix"
)

// dirFile is an open directory whose files grep reads. It makes the system calls itself:
// os.Open would register every file with the poller (two fcntl and an epoll_ctl more per
// file), and opening by name relative to the directory saves the kernel the path walk;
// both matter in a grep over a large tree.
type dirFile struct{ fd int }

func openDir(path string) (dirFile, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	return dirFile{fd}, err
}

func (d dirFile) close() { unix.Close(d.fd) }

// read reads the file name of the directory into buf[:0], growing it as needed, up to max
// bytes. It does not follow a symbolic link, nor block on a FIFO.
func (d dirFile) read(buf []byte, name string, max int) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return buf[:0], err
	}
	defer unix.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		err := retryEINTR(func() (err error) {
			n, err = unix.Read(fd, buf[len(buf):cap(buf)])
			return err
		})
		if err != nil {
			return buf[:0], err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf[:0], errTooLarge
		}
	}
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
