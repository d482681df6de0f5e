// Command delayline is the lab's WAN delay. In the router namespace, iptables sends the
// packets of each ordered node pair to a queue of their own (NFQUEUE); delayline holds each
// packet of queue Q for that queue's delay (half the pair's RTT), then accepts it. A queue is
// first in, first out, so one batch verdict releases every due packet of a queue. Packets stay
// in the kernel while held: only their ids come to this process.
//
// It fails closed: the rules carry no --queue-bypass, so while delayline is not running the
// kernel drops the lab's packets rather than passing them undelayed.
//
//	delayline -queue 102=5ms -queue 201=5ms [-maxlen 65536] [-stats FILE] [-spin 1ms]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const version = "1.0.0"

// queueFlags collects repeated -queue NUM=DELAY options.
type queueFlags map[uint16]time.Duration

func (q queueFlags) String() string { return fmt.Sprint(map[uint16]time.Duration(q)) }

func (q queueFlags) Set(value string) error {
	num, delay, ok := strings.Cut(value, "=")
	if !ok {
		return errors.New("want NUM=DELAY, e.g. 102=15ms")
	}
	n, err := strconv.ParseUint(num, 10, 16)
	if err != nil {
		return fmt.Errorf("queue number %q: want 0-65535", num)
	}
	d, err := time.ParseDuration(delay)
	if err != nil || d < 0 || d > 10*time.Second {
		return fmt.Errorf("delay %q: want a duration from 0 to 10s, e.g. 15ms", delay)
	}
	if _, dup := q[uint16(n)]; dup {
		return fmt.Errorf("queue %d given twice", n)
	}
	q[uint16(n)] = d
	return nil
}

func main() {
	queues := queueFlags{}
	flag.Var(queues, "queue", "NUM=DELAY: hold the packets of NFQUEUE queue NUM for DELAY (repeat)")
	maxLen := flag.Uint("maxlen", 65536, "packets a queue may hold; the kernel drops beyond")
	rcvbuf := flag.Int("rcvbuf", 32<<20, "netlink socket receive buffer, bytes")
	statsPath := flag.String("stats", "", "write counters as JSON to this file every second")
	spinMax := flag.Duration("spin", time.Millisecond, "longest busy wait before a release")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("delayline", version)
		return
	}
	if len(queues) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "delayline: give at least one -queue NUM=DELAY (see -h)")
		os.Exit(2)
	}
	if err := run(queues, uint32(*maxLen), *rcvbuf, *statsPath, *spinMax); err != nil {
		fmt.Fprintln(os.Stderr, "delayline:", err)
		os.Exit(1)
	}
}

func run(queues queueFlags, maxLen uint32, rcvbuf int, statsPath string, spinMax time.Duration) error {
	// One OS thread does everything; the loop allocates nothing, so the collector stays idle.
	runtime.LockOSThread()
	debug.SetGCPercent(400)
	// Timers fire when asked, not up to 50 µs later (the default slack).
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)

	stamps, err := enableTimestamps()
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayline: no kernel receive timestamps, delays count from reading:", err)
	} else {
		defer stamps.Close()
	}
	c, err := openConn(rcvbuf)
	if err != nil {
		return err
	}
	defer c.close()
	line := newDelayLine(queues)
	for _, q := range line.sorted {
		if err := c.bindQueue(q.num, maxLen); err != nil {
			return err
		}
	}
	if err := c.setNonblock(); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		if statsPath != "" {
			_ = os.Remove(statsPath)
		}
		os.Exit(0) // the kernel drops what we held: the queues die with the socket
	}()
	fmt.Printf("delayline %s: %d queues bound, pid %d\n", version, len(queues), os.Getpid())
	return line.serve(c, statsPath, spinMax.Nanoseconds())
}

// entry is one held packet: its id in its queue and when it is due, monotonic ns.
type entry struct {
	id  uint32
	due int64
}

// queue is the FIFO of one ordered pair: a ring that grows as needed.
type queue struct {
	num     uint16
	delay   int64
	ring    []entry
	head, n int
	active  bool
	packets uint64
	maxHeld int
}

func (q *queue) push(e entry) {
	if q.n == len(q.ring) {
		grown := make([]entry, max(64, 2*len(q.ring)))
		for i := 0; i < q.n; i++ {
			grown[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = grown, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = e
	q.n++
	q.packets++
	q.maxHeld = max(q.maxHeld, q.n)
}

func (q *queue) front() entry { return q.ring[q.head] }

func (q *queue) pop() entry {
	e := q.ring[q.head]
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	return e
}

type delayLine struct {
	byNum  []*queue // indexed by queue number
	sorted []*queue
	active []*queue // queues holding packets

	stampsSeen    bool
	verdictErrors uint64
	wakeMargin    int64 // ns: how early we wake before a due time, learned from overshoots
	overshoot     float64
	lateSum       int64
	lateMax       int64
	lateCount     int64
	lateMaxEver   int64
	unknownQueue  uint64
}

func newDelayLine(queues queueFlags) *delayLine {
	line := &delayLine{byNum: make([]*queue, 1<<16), wakeMargin: 100_000}
	for num, d := range queues {
		q := &queue{num: num, delay: d.Nanoseconds()}
		line.byNum[num] = q
		line.sorted = append(line.sorted, q)
	}
	sort.Slice(line.sorted, func(i, j int) bool { return line.sorted[i].num < line.sorted[j].num })
	return line
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func realNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	return ts.Nano()
}

// receive reads every waiting packet message (up to a bound, so releases are not starved).
func (l *delayLine) receive(c *conn, buf []byte) error {
	now := monoNow()
	realOffset := realNow() - now
	for range 512 {
		n, err := unix.Read(c.fd, buf)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				return nil
			}
			if errors.Is(err, unix.ENOBUFS) { // messages were lost: those packets are dropped
				continue
			}
			return fmt.Errorf("reading packets: %w", err)
		}
		l.verdictErrors += uint64(parse(buf[:n], func(p packet) {
			q := l.byNum[p.queue]
			if q == nil {
				l.unknownQueue++
				return
			}
			arrival := now
			if p.stampNs != 0 {
				// The kernel's receive time in the router: a late reader does not add delay.
				if stamped := p.stampNs - realOffset; stamped <= now && stamped > now-1e9 {
					arrival = stamped
					l.stampsSeen = true
				}
			}
			q.push(entry{id: p.id, due: arrival + q.delay})
			if !q.active {
				q.active = true
				l.active = append(l.active, q)
			}
		}))
	}
	return nil
}

// release accepts every due packet (one verdict per queue) and returns the next due time.
func (l *delayLine) release(c *conn, now int64) int64 {
	next := int64(math.MaxInt64)
	kept := l.active[:0]
	for _, q := range l.active {
		if q.n > 0 && q.front().due <= now {
			late := now - q.front().due
			l.lateSum += late
			l.lateCount++
			l.lateMax = max(l.lateMax, late)
			var last entry
			for q.n > 0 && q.front().due <= now {
				last = q.pop()
			}
			c.addVerdict(q.num, last.id)
		}
		if q.n > 0 {
			kept = append(kept, q)
			next = min(next, q.front().due)
		} else {
			q.active = false
		}
	}
	l.active = kept
	if err := c.flush(); err != nil {
		l.verdictErrors++
	}
	return next
}

func (l *delayLine) serve(c *conn, statsPath string, spinMax int64) error {
	buf := make([]byte, 1<<16)
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	const statsEvery = int64(time.Second)
	nextStats := monoNow()
	for {
		now := monoNow()
		next := l.release(c, now)
		if statsPath != "" && now >= nextStats {
			l.writeStats(statsPath)
			nextStats = now + statsEvery
		}
		wait := min(next, nextStats) - now
		if wait <= 0 {
			continue
		}
		sleep := wait - l.wakeMargin
		if sleep <= 0 && next <= nextStats {
			// Close to a due time: take what arrived, then spin on the clock, since waking
			// from a sleep on an idle VM can take longer than the time that is left.
			if _, err := unix.Ppoll(fds, &unix.Timespec{}, nil); err == nil && fds[0].Revents != 0 {
				if err := l.receive(c, buf); err != nil {
					return err
				}
				continue
			}
			for monoNow() < next {
			}
			continue
		}
		sleep = max(sleep, 0)
		ts := unix.NsecToTimespec(sleep)
		asked := monoNow() + sleep
		n, err := unix.Ppoll(fds, &ts, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll: %w", err)
		}
		if n == 0 && err == nil {
			l.learnOvershoot(monoNow()-asked, spinMax)
		}
		if n > 0 {
			if err := l.receive(c, buf); err != nil {
				return err
			}
		}
	}
}

// learnOvershoot keeps the wake-up margin at twice the average lateness of timed sleeps
// (bounded by spinMax): a busy machine wakes on time and spins little, an idle VM needs more.
func (l *delayLine) learnOvershoot(late int64, spinMax int64) {
	l.overshoot += (float64(max(late, 0)) - l.overshoot) / 16
	l.wakeMargin = min(spinMax, int64(2*l.overshoot)+20_000)
}

type queueStats struct {
	Queue   uint16  `json:"queue"`
	DelayMs float64 `json:"delay_ms"`
	Packets uint64  `json:"packets"`
	Held    int     `json:"held"`
	MaxHeld int     `json:"max_held"`
}

type stats struct {
	Pid           int          `json:"pid"`
	Version       string       `json:"version"`
	Updated       float64      `json:"updated"`
	KernelStamps  bool         `json:"kernel_timestamps"`
	WakeMarginUs  float64      `json:"wake_margin_us"`
	LateMeanUs    float64      `json:"late_mean_us"`
	LateMaxUs     float64      `json:"late_max_us"`
	LateMaxEverUs float64      `json:"late_max_ever_us"`
	VerdictErrors uint64       `json:"verdict_errors"`
	UnknownQueue  uint64       `json:"unknown_queue_packets"`
	Queues        []queueStats `json:"queues"`
}

// writeStats replaces the stats file (write, then rename): readers never see half of it.
func (l *delayLine) writeStats(path string) {
	s := stats{
		Pid:           os.Getpid(),
		Version:       version,
		Updated:       float64(realNow()) / 1e9,
		KernelStamps:  l.stampsSeen,
		WakeMarginUs:  float64(l.wakeMargin) / 1e3,
		LateMaxUs:     float64(l.lateMax) / 1e3,
		VerdictErrors: l.verdictErrors,
		UnknownQueue:  l.unknownQueue,
	}
	if l.lateCount > 0 {
		s.LateMeanUs = float64(l.lateSum) / float64(l.lateCount) / 1e3
	}
	l.lateMaxEver = max(l.lateMaxEver, l.lateMax)
	s.LateMaxEverUs = float64(l.lateMaxEver) / 1e3
	l.lateSum, l.lateCount, l.lateMax = 0, 0, 0
	for _, q := range l.sorted {
		s.Queues = append(s.Queues, queueStats{
			q.num, float64(q.delay) / 1e6, q.packets, q.n, q.maxHeld,
		})
	}
	data, err := json.Marshal(s)
	if err != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, append(data, '\n'), 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}
