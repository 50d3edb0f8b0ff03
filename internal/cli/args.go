package cli

import (
	"errors"
	"fmt"
	"strings"
)

// The command's options are read the way flock(1) and other GNU tools read
// theirs (docs/command.md, "Options"): short options bundle (-nv) and take
// their value attached or as the next argument (-w5, -w 5); long options
// take theirs after "=" or as the next argument (--wait=5, --wait 5);
// options end at the first operand or at "--". The flag package does none
// of this, and no dependency is worth a parser this small.

// errHelp and errVersion are what parseOptions returns when -h or -V asks
// for help or the version instead of a run.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// option is one option of a subcommand.
type option struct {
	names []string // every spelling: "-n", "--nonblock", "--nb"
	value string   // the value's name in messages; "" for an option without one
	set   func(value string) error
	// choices are the values it takes, when they are few: the shell
	// completions offer them.
	choices []string
	// refused: named only to say why proclock does not have it; the
	// completions leave it out.
	refused bool
}

// helpOptions are -h and -V, which every subcommand has.
var helpOptions = []option{
	{names: []string{"-h", "--help"}, set: func(string) error { return errHelp }},
	{names: []string{"-V", "--version"}, set: func(string) error { return errVersion }},
}

// refused is an option that proclock names so as to say why it does not
// have it.
func refused(why string, names ...string) option {
	return option{names: names, refused: true, set: func(string) error { return errors.New(why) }}
}

// parseOptions reads the options at the start of args as opts define them
// and returns the operands: everything from the first argument that is not
// an option on, or everything after a first "--". A bad option is a usage
// error of sub.
func parseOptions(sub string, opts []option, args []string) ([]string, error) {
	byName := optionsByName(opts)
	var i int
	// use applies o, given as name: with value when given, or with the
	// next argument when o takes a value and none was given.
	use := func(name string, o *option, value string, given bool) error {
		if o.value != "" && !given {
			if i+1 == len(args) {
				return usagef(sub, "option %s needs a value (%s)", name, o.value)
			}
			i++
			value = args[i]
		}
		return apply(sub, name, o, value)
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:], nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			return args[i:], nil
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a, "=")
			o := byName[name]
			if o == nil {
				return nil, usagef(sub, "unknown option %s", name)
			}
			if o.value == "" && hasValue {
				return nil, usagef(sub, "option %s takes no value", name)
			}
			if err := use(name, o, value, hasValue); err != nil {
				return nil, err
			}
		default:
			if err := shortBundle(sub, byName, a, use); err != nil {
				return nil, err
			}
		}
	}
	return nil, nil
}

// optionsByName maps each spelling of opts to its option.
func optionsByName(opts []option) map[string]*option {
	byName := map[string]*option{}
	for i := range opts {
		for _, n := range opts[i].names {
			byName[n] = &opts[i]
		}
	}
	return byName
}

// shortBundle applies a, a bundle of short options, with use; one that
// takes a value ends it, with the rest of the bundle or the next argument
// as its value.
func shortBundle(sub string, byName map[string]*option, a string, use func(name string, o *option, value string, given bool) error) error {
	for j := 1; j < len(a); j++ {
		name := "-" + a[j:j+1]
		o := byName[name]
		if o == nil {
			hint := ""
			if byName["-"+a] != nil {
				hint = fmt.Sprintf(" (long options take two dashes: -%s)", a)
			}
			if len(a) > 2 {
				return usagef(sub, "unknown option %s in %s%s", name, a, hint)
			}
			return usagef(sub, "unknown option %s", name)
		}
		value := a[j+1:]
		if err := use(name, o, value, value != ""); err != nil {
			return err
		}
		if o.value != "" {
			return nil
		}
	}
	return nil
}

// apply sets option o, given as name, to value; a bad value is a usage
// error of sub that names the option.
func apply(sub, name string, o *option, value string) error {
	err := o.set(value)
	if err == nil || errors.Is(err, errHelp) || errors.Is(err, errVersion) {
		return err
	}
	if o.value != "" {
		return usagef(sub, "%s %s: %v", name, value, err)
	}
	return usagef(sub, "%s: %v", name, err)
}

// optionTables are the options that run and status take with backends,
// as runMain and statusMain hand them to the parser: the man page and the
// shell completions are made from them, so that they cannot drift.
func optionTables(backends []Backend) (run, status []option) {
	var o runOptions
	var waitSet bool
	var script *string
	var x runExtra
	run = append(runOptionTable(&o, &waitSet, &script), x.options(backends)...)
	var so statusOptions
	status = append(statusOptionTable(&so), append(x.backendOptions(backends), helpOptions...)...)
	return run, status
}

// parsed ends a subcommand whose arguments asked for help or the version,
// or were wrong (done), with its exit code; help is the subcommand's.
func parsed(err error, help string, std streams) (code int, done bool) {
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(std.out, help)
		return exitOK, true
	case errors.Is(err, errVersion):
		return printVersion(std.out), true
	case err != nil:
		complain(std.err, err)
		return exitUsage, true
	}
	return 0, false
}
