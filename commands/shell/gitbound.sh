# agentd's git in a bounded run: bound over git in the sandbox, it runs the real one
# (real, above) so that git runs no program the repository's config names. A pattern
# approved this command, not a person.
#
# It asks the real git which keys the config it will read sets (local, worktree config,
# and a nested repository's own alike) and takes the repository only when each is one of
# an allow list that names no program (allowed, above: boundedGitKeys); an include is
# none. So no list of the keys that do name one is needed, and a newer git's is refused.
# As a second wall, the drivers .gitattributes selects by a name of the repository's
# choosing (filter.NAME.clean/smudge/process, diff.NAME.textconv/command,
# merge.NAME.driver), the archive formats git archive --format picks (tar.NAME.command)
# and aliases are given, in git's command-line scope that no repository overrides, a
# value that runs none of them; the keys that are one for every repository
# (core.fsmonitor, core.hooksPath, ...) are set already, in the environment. A manual
# page is refused: its viewers are a list (man.viewer) the repository's entries head,
# which no later setting takes back. A subcommand that is not git's own (an alias) is
# refused, and so are the ones whose work is to run a tool the config names (difftool...).
# Rebase, am, cherry-pick and revert refuse a repository stopped in one of them (any entry
# at their state paths, a dangling link too), in every run: its state files (a rebase's
# todo list) name commands --continue runs; and every form that resumes one is refused
# before any state is read, since the run could write that state after a check.
#
# git reads the config again after this checked it, so this takes only a repository whose
# config no process of the run can change in between (the other side of a pipe, tee -a
# .git/config): a file the sandbox holds read-only (held, above), and names that
# repository to git, so that a .git made nearer meanwhile is not the one it finds.
refuse_help() {
	echo "agentd: a bounded git shows no manual page: git would run the viewer the repository's config names (man.viewer, help.browser). Use git COMMAND -h, or approve the command yourself (y)." >&2
	exit 128
}
k=0 value= named= sub=
for a; do
	if [ -n "$value" ]; then
		value= k=$((k + 1))
		continue
	fi
	case $a in
	-c | -c* | --config-env | --config-env=* | --exec-path=*)
		echo "agentd: a bounded git takes no $a: settings given on its command line would outrank the ones that keep the repository's programs from running. Approve the command yourself (y)." >&2
		exit 128
		;;
	--git-dir) named=$a value=1 ;;
	--git-dir=* | --bare) named=$a ;;
	-C | --work-tree | --namespace | --super-prefix) value=1 ;;
	--help) refuse_help ;;
	-*) ;;
	*)
		sub=$a
		break
		;;
	esac
	k=$((k + 1))
done

# subcommand ARGS...: whether git's subcommand and its first argument ask for a manual page.
manual() {
	shift "$k"
	[ "${1-}" = help ] || [ "${2-}" = --help ]
}
if manual "$@"; then
	refuse_help
fi

# here M X1..XM ARGS...: the real git with ARGS's first k (git's own options: -C,
# --git-dir...), so in the repository ARGS lead to, and X1..XM after them.
here() {
	m=$1
	shift
	all=$# i=0
	for a; do
		[ "$i" -ge "$m" ] && [ "$i" -lt $((m + k)) ] && set -- "$@" "$a"
		i=$((i + 1))
	done
	i=0
	for a; do
		[ "$i" -lt "$m" ] && set -- "$@" "$a"
		i=$((i + 1))
	done
	shift "$all"
	"$real" "$@"
}

# own ARGS...: whether git's subcommand, if there is one, is git's own (a builtin or a
# program of its exec path), not an alias of the repository's.
own() {
	shift "$k"
	[ "$#" -eq 0 ] && return
	for c in $("$real" --list-cmds=main); do
		[ "$c" = "$1" ] && return
	done
	return 1
}
if ! own "$@"; then
	echo "agentd: a bounded git runs only git's own commands: this is none (an alias, which could run anything). Use the command it stands for, or approve it yourself (y)." >&2
	exit 128
fi

# tool ARGS...: whether git's subcommand is one whose work is to run a program the config
# names (difftool.NAME.cmd, mergetool.NAME.cmd, browser.NAME.cmd, imap.tunnel...): no
# setting turns off a tool of the repository's naming, so a bounded git runs none of them.
tool() {
	shift "$k"
	case ${1-} in difftool | mergetool | web--browse | instaweb | imap-send) ;; *) return 1 ;; esac
}
if tool "$@"; then
	echo "agentd: a bounded git runs no difftool, mergetool, browser or imap tunnel: each runs a program the repository's config names. Use git diff, or approve the command yourself (y)." >&2
	exit 128
fi

# The repository git works in is the one found here, named to it (GIT_DIR, GIT_COMMON_DIR,
# GIT_WORK_TREE), and taken only when its config is a file this run cannot change (fixed):
# a .git a pipe's other side makes nearer, or a line added to the config, after this
# checked it cannot change what git reads. init and clone, which make a repository, read
# none's config; outside any repository git finds none (GIT_DIR=/dev/null).
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

# fixed FILE: whether FILE is one the sandbox holds read-only (held, above), named plainly
# (no link in its folders, no . or ..) and no link itself, so that it is that file until
# the run ends.
fixed() {
	case $1 in *//* | */./* | */../* | */. | */..) return 1 ;; esac
	[ ! -L "$1" ] && [ "$(cd "${1%/*}" 2>/dev/null && pwd -P)" = "${1%/*}" ] && held "$1"
}
refuse_changeable() {
	echo "agentd: refused: a bounded git reads only a repository whose config this command cannot change, and it could change $1 (one it made, copied or moved, one in /tmp or in a helper's folder, one deeper than the workspace and two levels down, or a config with another name, a hard link). Run git in a repository that was in the workspace before this command began (the rest as a command of its own), or approve this command yourself (y)." >&2
	exit 128
}
case $sub in
init | clone) ;;
*)
	# The top of the work tree last: outside one (a bare repository named) git says false,
	# then fails at it.
	repo=$(here 6 rev-parse --path-format=absolute --absolute-git-dir --git-common-dir --is-inside-work-tree --show-toplevel "$@" 2>/dev/null)
	ok=$?
	{
		IFS= read -r gitdir
		IFS= read -r common
		IFS= read -r inside
		IFS= read -r top
	} <<REPO
$repo
REPO
	if [ "$ok" = 0 ] || [ "$inside" = false ]; then
		fixed "$common/config" || refuse_changeable "$common/config"
		if [ "$ok" = 0 ]; then
			export GIT_WORK_TREE="$top"
		fi
		export GIT_DIR="$gitdir" GIT_COMMON_DIR="$common"
	else
		why=$(here 2 rev-parse --git-dir "$@" 2>&1 >/dev/null)
		case $why in
		"fatal: not a git repository"*) ;;
		*) # git's own word on why it takes none (a bare repository found, not named)
			echo "$why" >&2
			exit 128
			;;
		esac
		if [ -n "$named" ]; then
			echo "agentd: refused: $named names no git repository, and a bounded git does not take one that may become one while it runs. Name a repository that was in the workspace before this command began, or approve this command yourself (y)." >&2
			exit 128
		fi
		export GIT_DIR=/dev/null
	fi
	;;
esac

# The repository's config (local, worktree) is taken only when each key it sets is one of
# boundedGitKeys (allowed, above), which name no program: no list of the keys that do is
# needed, and a newer git's new one is refused. Those that do are neutralised still, a
# second wall should the list ever take one.
keys=$(here 4 config --list --name-only --show-scope "$@")
case $? in
0 | 1) ;; # 1: none
*)
	echo "agentd: a bounded git cannot read this repository's config (above), so cannot keep the programs it names from running: fix the config, or approve the command yourself (y)." >&2
	exit 128
	;;
esac

n=${GIT_CONFIG_COUNT:-0}
set_key() {
	export "GIT_CONFIG_KEY_$n=$1" "GIT_CONFIG_VALUE_$n=$2"
	n=$((n + 1))
}
while IFS= read -r line; do
	scope=${line%%	*} key=${line#*	}
	case $scope in "" | command) continue ;; esac # agentd's own (the command line's are refused)
	if ! allowed "$key"; then
		echo "agentd: refused: this repository's config ($scope) sets $key, which a bounded git does not take: it takes only keys that name no program (those git init, clone, remote and branch write, user.name, user.email). Remove it with git config --unset-all \"$key\" outside the agent, or approve the command yourself (y)." >&2
		exit 128
	fi
	case $key in
	extensions.worktreeconfig) # git reads the worktree's config too
		[ -z "$named" ] || refuse_changeable "the worktree config of the repository $named names"
		fixed "$GIT_DIR/config.worktree" || refuse_changeable "$GIT_DIR/config.worktree"
		;;
	filter.*) # no filter: the content as it is
		set_key "${key%.*}.clean" ""
		set_key "${key%.*}.smudge" ""
		set_key "${key%.*}.process" ""
		set_key "${key%.*}.required" false
		;;
	diff.*.textconv) set_key "$key" cat ;; # the text as it is
	diff.*.command | diff.external) # set only where the config names one: a git diff runs it
		set_key "$key" 'echo "agentd: a bounded git runs no external diff (diff.external, diff.NAME.command): add --no-ext-diff" >&2; false'
		;;
	merge.*.driver)
		set_key "$key" 'echo "agentd: a bounded git runs no merge.NAME.driver: the file is left in conflict" >&2; false'
		;;
	alias.*) set_key "$key" "" ;; # git: "'' is not a git command"
	tar.*.command)
		set_key "$key" 'echo "agentd: a bounded git runs no tar.NAME.command: use git archive --format=tar or zip" >&2; false'
		;;
	submodule.*.update) # "!command": git submodule update runs it
		echo "agentd: refused: this repository's config sets $key, which may name a program git submodule update runs. Remove the key (git config --unset $key), or approve the command yourself (y)." >&2
		exit 128
		;;
	trailer.*.cmd | trailer.*.command) # git commit --trailer runs it
		if [ "$write" = true ]; then
			echo "agentd: refused: this repository's config sets $key, a program git runs that a bounded git cannot turn off, and this run may write the workspace. Remove the key (git config --unset), or approve the command yourself (y)." >&2
			exit 128
		fi
		;;
	esac
done <<KEYS
$keys
KEYS
export GIT_CONFIG_COUNT="$n"

# resumes ARGS...: whether git's subcommand goes on with, edits, shows or ends a stopped
# rebase, am, cherry-pick or revert. A stopped one is refused in every run (below), so a
# bounded git has no use for these, and their state files (a rebase's todo, whose exec
# lines --continue runs) are ones this run may write after any check of them: refused
# before any is read. --abort and --quit too: they run no exec line but set HEAD and the
# branch from those same files, to a commit of the run's choosing.
resumes() {
	shift "$k"
	case ${1-} in rebase | am | cherry-pick | revert) ;; *) return 1 ;; esac
	s=$1
	shift
	[ "$s" = am ] && [ "$#" -eq 0 ] && return 0 # no patches: am goes on with a stopped one
	for a; do
		case $a in
		--continue | --skip | --edit-todo | --quit | --abort | --resolved | --show-current-patch*) return 0 ;;
		-r) [ "$s" = am ] && return 0 ;; # am's --resolved (rebase's -r is --rebase-merges)
		--) return 1 ;;
		esac
	done
	return 1
}
if resumes "$@"; then
	echo "agentd: refused: a bounded git does not resume, edit or end a repository stopped in a rebase, am, cherry-pick or revert (--continue, --skip, --edit-todo, --abort, --quit, am with no patch): their state files name commands git would run (a rebase's exec lines), and this run could write them after any check. Finish or abort the rebase (or am, cherry-pick, revert) outside the agent, e.g. git rebase --abort, or approve the command yourself (y)." >&2
	exit 128
fi

# sequencer ARGS...: whether git's subcommand goes on with a stopped rebase, am,
# cherry-pick or revert (the commands git itself starts while one runs are not these).
sequencer() {
	shift "$k"
	case ${1-} in rebase | am | cherry-pick | revert) ;; *) return 1 ;; esac
}
# A sequencer command refuses a repository stopped in one of them, read-only or not: a
# copy of the repository where the run may write (/tmp) goes on as well. The paths are
# $GIT_DIR's (absolute, above) as named, not resolved (--path-format=absolute would follow
# a dangling link to a path that is not there yet): any entry there, a link too, is one.
if sequencer "$@" && state=$(here 7 rev-parse --git-path rebase-merge --git-path rebase-apply --git-path sequencer "$@" 2>/dev/null); then
	while IFS= read -r p; do
		if [ -e "$p" ] || [ -L "$p" ]; then # a link, dangling or not: the run can fill it
			echo "agentd: refused: this repository is stopped in a rebase, am, cherry-pick or revert ($p), whose files name commands git would run (a rebase's exec lines). Approve the command yourself (y), or ask a person to run git rebase --abort (or am/cherry-pick/revert --abort)." >&2
			exit 128
		fi
	done <<STATE
$state
STATE
fi
exec "$real" "$@"
