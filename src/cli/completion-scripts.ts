// The completion scripts `completion SHELL` prints. Each completes kubectl-appstorage run by its own
// file name and asks the plugin itself on every TAB, through the hidden __complete command
// (cobra's protocol, src/cli/completion.ts): candidates one a line ("value<TAB>description"), then
// ":directive" (1: an error, 2: no space after, 4: no file names). So the scripts hold no list of
// commands or flags: those come from the table that builds the parser.
import { completionShells } from "./flags";

const bashScript = `# bash completion for kubectl-appstorage: source <(kubectl-appstorage completion bash)
# This completes the binary run by its own name. \`kubectl appstorage <TAB>\` is completed by
# kubectl's completion, which runs the kubectl_complete-appstorage executable (see the README).
_kubectl_appstorage() {
  local line="\${COMP_LINE:0:COMP_POINT}" cur out directive c
  local -a words lines
  read -ra words <<<"$line"
  # read drops a trailing empty word: a line that ends in a space starts a new word.
  [[ "$line" =~ [[:space:]]$ ]] && words+=("")
  cur="\${words[\${#words[@]}-1]}"
  mapfile -t lines < <("\${words[0]}" __completeNoDesc "\${words[@]:1}" 2>/dev/null)
  (( \${#lines[@]} )) || return
  directive="\${lines[\${#lines[@]}-1]#:}"
  unset 'lines[\${#lines[@]}-1]'
  (( directive & 1 )) && return
  (( directive & 2 )) && compopt -o nospace 2>/dev/null
  (( directive & 4 )) && compopt +o default 2>/dev/null
  COMPREPLY=()
  for c in "\${lines[@]}"; do [[ -n "$c" && "$c" == "$cur"* ]] && COMPREPLY+=("$c"); done
  # bash replaces only the part after the last = or : (COMP_WORDBREAKS); drop what precedes it.
  if [[ "$cur" == *[=:]* ]]; then
    local head="\${cur%"\${cur##*[=:]}"}"
    COMPREPLY=("\${COMPREPLY[@]#"$head"}")
  fi
}
complete -o default -F _kubectl_appstorage kubectl-appstorage
`;

const zshScript = `#compdef kubectl-appstorage
# zsh completion for kubectl-appstorage: source <(kubectl-appstorage completion zsh), after compinit.
# This completes the binary run by its own name. \`kubectl appstorage <TAB>\` is completed by
# kubectl's completion, which runs the kubectl_complete-appstorage executable (see the README).
_kubectl_appstorage() {
  local -a lines candidates
  local directive line value description
  lines=("\${(@f)$("\${words[1]}" __complete "\${(@)words[2,CURRENT-1]}" "\${words[CURRENT]}" 2>/dev/null)}")
  directive="\${lines[-1]#:}"
  lines=("\${(@)lines[1,-2]}")
  (( directive & 1 )) && return 1
  for line in "\${lines[@]}"; do
    [[ -z "$line" ]] && continue
    value="\${line%%$'\\t'*}"
    description=""
    [[ "$line" == *$'\\t'* ]] && description="\${line#*$'\\t'}"
    candidates+=("\${value//:/\\\\:}\${description:+:$description}")
  done
  if (( \${#candidates} )); then
    if (( directive & 2 )); then _describe -t values completions candidates -S ''; else _describe -t values completions candidates; fi
    return
  fi
  (( directive & 4 )) || _files
}
compdef _kubectl_appstorage kubectl-appstorage
`;

const fishScript = `# fish completion for kubectl-appstorage: kubectl-appstorage completion fish | source
# (or save it as ~/.config/fish/completions/kubectl-appstorage.fish).
# This completes the binary run by its own name. \`kubectl appstorage <TAB>\` is completed by
# kubectl's completion, which runs the kubectl_complete-appstorage executable (see the README).
function __kubectl_appstorage_has_bit --argument-names directive bit
    test (math (math --scale 0 $directive / $bit) % 2) -eq 1
end

# Asks the plugin; false (fish then offers file names) on no answer, an error, or when the plugin
# has nothing to offer and does not rule file names out.
function __kubectl_appstorage_ask
    set -g __kubectl_appstorage_candidates
    set -l words (commandline -opc)
    set -l program $words[1]
    set -e words[1]
    # Quoted, the word under the cursor is one argument, also when it is empty (a new word).
    set -l current (commandline -ct)
    set -l lines (command $program __complete $words "$current" 2>/dev/null)
    test (count $lines) -gt 0; or return 1
    set -l directive (string replace -r '^:' '' -- $lines[-1])
    set -e lines[-1]
    __kubectl_appstorage_has_bit $directive 1; and return 1
    set -g __kubectl_appstorage_candidates $lines
    if test (count $lines) -eq 0
        __kubectl_appstorage_has_bit $directive 4; or return 1
    end
    return 0
end

complete -c kubectl-appstorage -e
complete -c kubectl-appstorage -f -n __kubectl_appstorage_ask -a '$__kubectl_appstorage_candidates'
`;

const powershellScript = `# PowerShell completion for kubectl-appstorage:
#   kubectl-appstorage completion powershell | Out-String | Invoke-Expression
# (add that line to $PROFILE to keep it). This completes the binary run by its own name.
# \`kubectl appstorage <TAB>\` is completed by kubectl's completion, which runs the
# kubectl_complete-appstorage executable (see the README).
Register-ArgumentCompleter -Native -CommandName 'kubectl-appstorage', 'kubectl-appstorage.exe' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    # The words before the cursor, as the plugin reads them; a new, empty word after a space.
    $elements = @($commandAst.CommandElements | Where-Object { $_.Extent.StartOffset -lt $cursorPosition })
    $words = @($elements | Select-Object -Skip 1 | ForEach-Object {
        if ($_ -is [System.Management.Automation.Language.StringConstantExpressionAst]) { $_.Value } else { $_.Extent.Text }
    })
    if ($wordToComplete -eq '') {
        # Windows PowerShell, and PowerShell before 7.3, drop an empty argument to a program: "" passes one.
        if ($PSVersionTable.PSVersion -lt [version]'7.3' -or $PSNativeCommandArgumentPassing -eq 'Legacy') { $words += '""' } else { $words += '' }
    }
    $lines = @(& $commandAst.GetCommandName() __complete @words 2>$null)
    if ($lines.Count -eq 0) { return }
    $directive = [int]($lines[-1].TrimStart(':'))
    if ($directive -band 1) { return }
    $candidates = @($lines | Select-Object -SkipLast 1 | Where-Object { $_ -ne '' })
    # Nothing to offer: an empty result where file names are ruled out, else PowerShell's file names.
    if ($candidates.Count -eq 0) {
        if ($directive -band 4) { '' }
        return
    }
    foreach ($line in $candidates) {
        $value, $description = $line -split "\`t", 2
        if (-not $description) { $description = $value }
        # What PowerShell would read as syntax (a comma makes an array) gets a backtick before it.
        $text = $value -replace '[\\s#@$;,''{}()"\`|<>&]', '\`$0'
        [System.Management.Automation.CompletionResult]::new($text, $value, 'ParameterValue', $description)
    }
}
`;

export type CompletionShell = (typeof completionShells)[number];

const scripts: Record<CompletionShell, string> = { bash: bashScript, zsh: zshScript, fish: fishScript, powershell: powershellScript };

export function completionScript(shell: CompletionShell): string {
  return scripts[shell];
}
