// Posts the graphnetz verdicts as ONE pull-request comment, found again by its marker line and
// edited in place. Run by actions/github-script:
//
//   - graphnetz.yml, for a pull request from this repository (its token may write);
//   - graphnetz-comment.yml, on `workflow_run`, for a pull request from a fork (whose own run
//     has a read-only token): it reads the comment and the PR number from the run's artifact.
//
// The comment body is the file the plugin wrote with --graphnetz-comment (one headline, the rows
// that are not IDENTICAL, failing first, under 10,000 characters), or, for a fork's pull
// request (graphnetz-comment.yml passes `json`), rendered here from the JSON verdict file: the
// fork's run wrote its artifact with the fork's code, so its Markdown is not trusted; only its
// numbers and names are, as data, each escaped by this script. The rules that keep the pull
// request's page truthful:
//   - the body never exceeds GitHub's 65,536 characters: a longer file is cut at a line, and
//     says so, pointing to the step summary and the artifact;
//   - a missing file still posts: "no verdicts were written" (the gate step crashed);
//   - when posting fails, the previous comment must not keep showing an older push's verdicts:
//     it is replaced by a short "stale" notice, or deleted when even that fails;
//   - a read-only token (a fork's pull request) is a warning, not an error: the workflow_run
//     workflow posts instead.
//
// Tested under node against a fake API that enforces the limit (tests/cover/test_workflow.py).
'use strict';

const fs = require('fs');

const MARKER = '<!-- graphnetz-gates -->';
const LIMIT = 65536;   // GitHub refuses a comment body longer than this
const ROOM = 60000;    // what the verdicts may take: the marker and the run link need the rest

function verdictText(path) {
  let text;
  try {
    text = fs.readFileSync(path, 'utf8').trim();
  } catch (err) {
    return ['### graphnetz gates ✗', '',
            `**No verdicts were written** (\`${path}\`: ${err.code || err.message}): the gate ` +
            'step stopped before its summary. See the workflow run.'].join('\n');
  }
  if (text.length <= ROOM) {
    return text;
  }
  const cut = text.lastIndexOf('\n', ROOM);
  return text.slice(0, cut > 0 ? cut : ROOM) +
    `\n\n_… cut at ${ROOM} characters: the full table is in the job's step summary and in ` +
    'the `graphnetz-verdicts` artifact._';
}

// -- a fork's verdicts: rendered from the JSON verdict file (docs/verdicts-json.md) -------------

const CELL = 300;   // characters of one table cell

// Literal Markdown text (the plugin's text.markdown_escape, re-done on the trusted side):
// controls visible, table, code, HTML and link specials escaped, mentions and bare links broken.
function esc(value) {
  let text = String(value ?? '');
  if (text.length > CELL) {
    text = text.slice(0, CELL) + ' …';
  }
  return text
    .replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g,
             c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
    .replace(/([\\`|<&*_~#!\[\]])/g, '\\$1')
    .replace(/@(?=[A-Za-z0-9])/g, '@\u200b')
    .replace(/\b(https?|ftp|www)(?=:|\.)/gi, '$1\u200b');
}

function shortTest(nodeid) {
  const text = String(nodeid ?? '');
  const at = text.indexOf('::');
  const path = at < 0 ? text : text.slice(0, at);
  return path.slice(path.lastIndexOf('/') + 1) + (at < 0 ? '' : text.slice(at));
}

function renderJson(path) {
  let data;
  try {
    data = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (err) {
    return ['### graphnetz gates ✗', '',
            `**No verdicts were written** (\`${path}\`: ${esc(err.code || err.message)}): the ` +
            'gate step stopped before its summary. See the workflow run.'].join('\n');
  }
  if (!data || data.schema !== 'pytest-graphnetz/verdicts' || !Array.isArray(data.rows)) {
    return ['### graphnetz gates ✗', '', `**The verdict file \`${path}\` is not a ` +
            'pytest-graphnetz verdict file**: see the workflow run.'].join('\n');
  }
  const passed = data.build_failed === false;   // anything else reads as failed
  const parts = [`### graphnetz gates ${passed ? '✓' : '✗'}`, '', `**${esc(data.headline)}**`];
  // As the Python comment does: IDENTICAL rows and widths within their max are counted, not
  // listed.
  const identical = data.rows.filter(r => r && r.verdict === 'IDENTICAL' && !r.failed_build);
  const widths = data.rows.filter(r => r && r.stats && r.stats.kind === 'ci_width' &&
                                       !r.failed && !r.failed_build);
  const folded = [
    identical.length ? `${identical.length} IDENTICAL row(s) (every paired seed scored ` +
                       "exactly the baseline's value)" : '',
    widths.length ? `${widths.length} width row(s) within their max width` : ''].filter(Boolean);
  if (folded.length) {
    parts.push('', `Not listed: ${folded.join(' and ')}.`);
  }
  const unused = Array.isArray(data.unused_cells) ? data.unused_cells : [];
  if (unused.length) {
    parts.push('', `${unused.length} baseline cell(s) that no gate of this run used:`, '');
    const files = new Map();
    for (const u of unused) {
      const file = String(u && u.baseline);
      files.set(file, [...(files.get(file) || []), String(u && u.cell)]);
    }
    [...files].slice(0, 20).forEach(([file, cells]) => parts.push(`- ${esc(file)}: ` +
                                                                  esc(cells.join(', '))));
    if (files.size > 20) {
      parts.push(`- … and ${files.size - 20} more baseline file(s) (the step summary)`);
    }
  }
  const listed = data.rows.filter(r => r && !identical.includes(r) && !widths.includes(r))
    .sort((a, b) => Number(Boolean(b.failed_build)) - Number(Boolean(a.failed_build)));
  if (listed.length) {
    parts.push('', '| Test | Cell | Paired Δ (+ = better) [CI] | Verdict | n | Note |',
               '|---|---|---|---|---|---|');
    let room = ROOM - parts.join('\n').length - 500, shown = 0;
    for (const r of listed) {
      const display = (r.display && typeof r.display === 'object') ? r.display : {};
      const verdict = (r.failed_build ? '✗ ' : '') + String(r.verdict ?? '');
      const line = '| ' + [shortTest(r.test), r.cell, display.delta, verdict, display.n, r.note]
        .map(esc).join(' | ') + ' |';
      if (room - line.length - 1 < 0) {
        break;
      }
      room -= line.length + 1;
      parts.push(line);
      shown += 1;
    }
    if (shown < listed.length) {
      parts.push('', `_… and ${listed.length - shown} more row(s) not shown: the full table is ` +
                 "in the job's step summary and in the graphnetz-verdicts artifact._");
    }
  }
  parts.push('', '<sub>Rendered from the run\'s JSON verdict file (a pull request from a ' +
             'fork: its own Markdown is not posted).</sub>');
  return parts.join('\n');
}

function commentBody(path, runUrl, json) {
  return [MARKER, json ? renderJson(json) : verdictText(path), '',
          `<sub>[workflow run: step summary and candidate reports](${runUrl})</sub>`].join('\n');
}

function staleBody(runUrl, err) {
  return [MARKER, '### graphnetz gates: stale', '',
          `The verdicts of the latest push could not be posted here (${describe(err)}), so ` +
          'this comment no longer shows any: an earlier push\'s verdicts would mislead. Read ' +
          `them in the [workflow run](${runUrl}) (step summary and the \`graphnetz-verdicts\` ` +
          'artifact).'].join('\n');
}

function describe(err) {
  return [err.status, err.message].filter(Boolean).join(' ').slice(0, 200);
}

// options: {github, context, core, path, json?, issueNumber?, runUrl?} (`json`: render from
// the JSON verdict file instead of posting `path`'s Markdown); returns what it did:
// 'created', 'updated', 'read-only', or throws after marking the old comment stale.
async function postComment({github, context, core, path, json, issueNumber, runUrl}) {
  const {owner, repo} = context.repo;
  const issue_number = Number(issueNumber ?? context.issue.number);
  if (!Number.isInteger(issue_number) || issue_number <= 0) {
    throw new Error(`graphnetz: no pull-request number to comment on (got ${issueNumber})`);
  }
  const run = runUrl ?? `${context.serverUrl}/${owner}/${repo}/actions/runs/${context.runId}`;
  const body = commentBody(path, run, json);
  if (body.length > LIMIT) {   // cannot happen with ROOM; a guard, not a policy
    throw new Error(`graphnetz: comment body of ${body.length} characters`);
  }
  const comments = await github.paginate(github.rest.issues.listComments,
                                         {owner, repo, issue_number});
  // Only a bot's comment is ours: a reviewer quoting the marker is never edited.
  const previous = comments.find(c => c.user && c.user.type === 'Bot' && c.body &&
                                      c.body.startsWith(MARKER));
  try {
    if (previous) {
      await github.rest.issues.updateComment({owner, repo, comment_id: previous.id, body});
      return 'updated';
    }
    await github.rest.issues.createComment({owner, repo, issue_number, body});
    return 'created';
  } catch (err) {
    if (err.status === 403) {
      core.warning('graphnetz: the token cannot write comments (a pull request from a fork?); ' +
                   'the graphnetz-comment workflow posts the verdicts from the artifact');
      return 'read-only';
    }
    if (previous) {
      try {
        await github.rest.issues.updateComment({owner, repo, comment_id: previous.id,
                                                body: staleBody(run, err)});
      } catch (staleErr) {
        try {
          await github.rest.issues.deleteComment({owner, repo, comment_id: previous.id});
        } catch (deleteErr) {
          core.warning('graphnetz: the previous verdict comment could be neither marked stale ' +
                       `nor deleted (${describe(deleteErr)})`);
        }
      }
    }
    throw err;
  }
}

module.exports = postComment;
module.exports.MARKER = MARKER;
module.exports.LIMIT = LIMIT;
module.exports.renderJson = renderJson;
