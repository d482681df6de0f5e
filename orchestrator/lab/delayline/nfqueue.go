package main

// The nfnetlink_queue protocol, spoken directly over a NETLINK_NETFILTER socket: bind a queue,
// read the metadata of each queued packet (never its payload), answer with batch verdicts.
// Constants and layouts follow include/uapi/linux/netfilter/nfnetlink_queue.h.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	msgPacket       = unix.NFNL_SUBSYS_QUEUE<<8 | 0 // NFQNL_MSG_PACKET
	msgConfig       = unix.NFNL_SUBSYS_QUEUE<<8 | 2 // NFQNL_MSG_CONFIG
	msgVerdictBatch = unix.NFNL_SUBSYS_QUEUE<<8 | 3 // NFQNL_MSG_VERDICT_BATCH

	attrPacketHdr = 1 // NFQA_PACKET_HDR: be32 packet id, be16 hw protocol, u8 hook
	attrVerdict   = 2 // NFQA_VERDICT_HDR: be32 verdict, be32 id
	attrTimestamp = 4 // NFQA_TIMESTAMP: be64 seconds, be64 microseconds (CLOCK_REALTIME)

	attrCfgCmd    = 1 // NFQA_CFG_CMD: u8 command, u8 pad, be16 protocol family
	attrCfgParams = 2 // NFQA_CFG_PARAMS: be32 copy range, u8 copy mode
	attrCfgMaxLen = 3 // NFQA_CFG_QUEUE_MAXLEN: be32
	attrCfgMask   = 4 // NFQA_CFG_MASK: be32
	attrCfgFlags  = 5 // NFQA_CFG_FLAGS: be32

	cmdBind    = 1 // NFQNL_CFG_CMD_BIND
	copyMeta   = 1 // NFQNL_COPY_META: ids and metadata only, the payload stays in the kernel
	flagGSO    = 4 // NFQA_CFG_F_GSO: queue GSO super-packets whole instead of segmenting them
	verdictAcc = 1 // NF_ACCEPT

	nlmsgHeaderLen = 16
	nfgenHeaderLen = 4
)

// conn is one netlink socket bound to any number of queues (of this network namespace).
type conn struct {
	fd  int
	seq uint32
	out []byte // verdicts collected by addVerdict, sent together by flush
}

func openConn(rcvbuf int) (*conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	c := &conn{fd: fd}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		c.close()
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A full socket buffer would drop packets (we fail closed), so make it large; ENOBUFS
	// would only tell us that afterwards.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf); err != nil {
		c.close()
		return nil, fmt.Errorf("SO_RCVBUFFORCE %d: %w", rcvbuf, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)
	return c, nil
}

func (c *conn) close() { _ = unix.Close(c.fd) }

func (c *conn) setNonblock() error { return unix.SetNonblock(c.fd, true) }

// header appends an nlmsghdr and an nfgenmsg for `queue`; the length is patched by finish.
func (c *conn) header(buf []byte, msgType uint16, flags uint16, queue uint16) []byte {
	c.seq++
	buf = binary.NativeEndian.AppendUint32(buf, 0)
	buf = binary.NativeEndian.AppendUint16(buf, msgType)
	buf = binary.NativeEndian.AppendUint16(buf, flags)
	buf = binary.NativeEndian.AppendUint32(buf, c.seq)
	buf = binary.NativeEndian.AppendUint32(buf, 0)
	buf = append(buf, unix.AF_UNSPEC, 0)
	return binary.BigEndian.AppendUint16(buf, queue)
}

func finish(buf []byte, start int) []byte {
	binary.NativeEndian.PutUint32(buf[start:], uint32(len(buf)-start))
	return buf
}

func attr(buf []byte, kind uint16, payload ...byte) []byte {
	buf = binary.NativeEndian.AppendUint16(buf, uint16(4+len(payload)))
	buf = binary.NativeEndian.AppendUint16(buf, kind)
	buf = append(buf, payload...)
	for len(buf)%4 != 0 {
		buf = append(buf, 0)
	}
	return buf
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// bindQueue binds `queue` to this socket: metadata copies, GSO packets whole, `maxLen`
// packets at most (more are dropped by the kernel: no fail-open flag is set).
func (c *conn) bindQueue(queue uint16, maxLen uint32) error {
	msg := c.header(nil, msgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, queue)
	msg = attr(msg, attrCfgCmd, cmdBind, 0, 0, 0)
	if err := c.request(finish(msg, 0), "bind"); err != nil {
		return fmt.Errorf("queue %d: %w", queue, err)
	}
	msg = c.header(nil, msgConfig, unix.NLM_F_REQUEST|unix.NLM_F_ACK, queue)
	msg = attr(msg, attrCfgParams, append(be32(0), copyMeta)...)
	msg = attr(msg, attrCfgMaxLen, be32(maxLen)...)
	msg = attr(msg, attrCfgMask, be32(flagGSO)...)
	msg = attr(msg, attrCfgFlags, be32(flagGSO)...)
	if err := c.request(finish(msg, 0), "configure"); err != nil {
		return fmt.Errorf("queue %d: %w", queue, err)
	}
	return nil
}

// request sends one message and waits for the kernel's acknowledgement (before any packet
// can arrive, so nothing else is read here).
func (c *conn) request(msg []byte, what string) error {
	if _, err := unix.Write(c.fd, msg); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Read(c.fd, buf)
		if err != nil {
			return fmt.Errorf("%s: reading the answer: %w", what, err)
		}
		for off := 0; off+nlmsgHeaderLen <= n; {
			length := int(binary.NativeEndian.Uint32(buf[off:]))
			kind := binary.NativeEndian.Uint16(buf[off+4:])
			seq := binary.NativeEndian.Uint32(buf[off+8:])
			if length < nlmsgHeaderLen || off+length > n {
				return fmt.Errorf("%s: malformed netlink answer", what)
			}
			if kind == unix.NLMSG_ERROR && seq == c.seq {
				code := int32(binary.NativeEndian.Uint32(buf[off+nlmsgHeaderLen:]))
				if code != 0 {
					return fmt.Errorf("%s: %w", what, unix.Errno(-code))
				}
				return nil
			}
			off += align4(length)
		}
	}
}

func align4(n int) int { return (n + 3) &^ 3 }

// packet is what one queued packet's message tells us.
type packet struct {
	queue   uint16
	id      uint32
	stampNs int64 // kernel receive time, CLOCK_REALTIME ns; 0 when the kernel gave none
}

// parse calls fn for each queued packet in a datagram; other messages count as errors when
// they report one (a verdict the kernel refused).
func parse(buf []byte, fn func(packet)) (errorsSeen int) {
	for off := 0; off+nlmsgHeaderLen <= len(buf); {
		length := int(binary.NativeEndian.Uint32(buf[off:]))
		if length < nlmsgHeaderLen || off+length > len(buf) {
			return errorsSeen + 1
		}
		kind := binary.NativeEndian.Uint16(buf[off+4:])
		body := buf[off+nlmsgHeaderLen : off+length]
		switch {
		case kind == msgPacket && len(body) >= nfgenHeaderLen:
			p := packet{queue: binary.BigEndian.Uint16(body[2:])}
			found := false
			for a := body[nfgenHeaderLen:]; len(a) >= 4; {
				alen := int(binary.NativeEndian.Uint16(a))
				atype := binary.NativeEndian.Uint16(a[2:]) & 0x3fff
				if alen < 4 || alen > len(a) {
					break
				}
				value := a[4:alen]
				switch {
				case atype == attrPacketHdr && len(value) >= 4:
					p.id, found = binary.BigEndian.Uint32(value), true
				case atype == attrTimestamp && len(value) >= 16:
					sec := int64(binary.BigEndian.Uint64(value))
					usec := int64(binary.BigEndian.Uint64(value[8:]))
					p.stampNs = sec*1e9 + usec*1e3
				}
				if align4(alen) >= len(a) {
					break
				}
				a = a[align4(alen):]
			}
			if found {
				fn(p)
			} else {
				errorsSeen++
			}
		case kind == unix.NLMSG_ERROR && len(body) >= 4:
			if binary.NativeEndian.Uint32(body) != 0 {
				errorsSeen++
			}
		}
		off += align4(length)
	}
	return errorsSeen
}

// addVerdict queues an ACCEPT for every packet of `queue` up to and including `id`.
func (c *conn) addVerdict(queue uint16, id uint32) {
	start := len(c.out)
	c.out = c.header(c.out, msgVerdictBatch, unix.NLM_F_REQUEST, queue)
	c.out = binary.NativeEndian.AppendUint16(c.out, 12) // attribute header + 8 bytes, no padding
	c.out = binary.NativeEndian.AppendUint16(c.out, attrVerdict)
	c.out = binary.BigEndian.AppendUint32(c.out, verdictAcc)
	c.out = binary.BigEndian.AppendUint32(c.out, id)
	c.out = finish(c.out, start)
}

// flush sends the collected verdicts in one write.
func (c *conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := unix.Write(c.fd, c.out)
	c.out = c.out[:0]
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("sending verdicts: %w", err)
	}
	return err
}

// enableTimestamps makes the kernel stamp received packets (a socket asking for receive
// timestamps switches this on machine-wide), so a packet's delay counts from its arrival in
// the router rather than from when this process got to read it.
func enableTimestamps() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "timestamps"), nil
}
